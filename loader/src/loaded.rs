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
