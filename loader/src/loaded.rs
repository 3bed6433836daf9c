//! Whether a CCA is loaded: the one question about the lifecycle that
//! modules below it ([`crate::flows`], [`crate::installed`],
//! [`crate::tunables`]) ask, answered here so they need not import it
//! (the lifecycle, which uses them, gives it out as
//! [`crate::lifecycle::is_loaded`]).

use crate::{kernel, BpfFs, Cca};

/// Is `cca` registered and pinned by this installation?
pub fn is_loaded(cca: Cca, fs: &BpfFs) -> bool {
    fs.link_pin(cca).exists() && kernel::is_registered(cca.name()).unwrap_or(false)
}

/// The CCAs whose link this installation pins, registered or not: the
/// base CCAs in [`Cca::ALL`]'s order, then second names (`qfair_b`) by
/// name. A pin of no CCA's name (another tool's) is not listed.
pub fn pinned(fs: &BpfFs) -> Vec<Cca> {
    let mut all: Vec<Cca> = Cca::ALL
        .into_iter()
        .filter(|c| fs.link_pin(*c).exists())
        .collect();
    let mut second: Vec<Cca> = std::fs::read_dir(fs.links_dir())
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<Cca>().ok())
                .filter(|c| c.base() != *c)
                .collect()
        })
        .unwrap_or_default();
    second.sort();
    all.extend(second);
    all
}
