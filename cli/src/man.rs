//! Man pages from the clap definitions (clap_mangen), so they cannot drift
//! from `--help`: `rttfairctl.1` and `rttfairctl-<command>.1` for each
//! subcommand (`lab` subcommands as `rttfairctl-lab-<command>.1`).

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

/// Write every page into `dir` (created if missing).
pub fn write_all(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let cmd = crate::Cli::command();
    page(dir, "rttfairctl", cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("rttfairctl-{}", sub.get_name());
        page(dir, &name, sub.clone())?;
        for sub2 in sub.get_subcommands() {
            page(dir, &format!("{name}-{}", sub2.get_name()), sub2.clone())?;
        }
    }
    Ok(())
}

fn page(dir: &Path, name: &str, cmd: clap::Command) -> Result<()> {
    let cmd = cmd
        .name(name.to_string())
        .version(env!("CARGO_PKG_VERSION"));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("write {}", path.display()))
}

#[cfg(test)]
mod tests {
    /// A page per visible subcommand, each a roff document naming itself.
    #[test]
    fn pages_for_every_command() {
        let tmp = tempfile::Builder::new()
            .prefix("rttfairctl-man-")
            .tempdir()
            .unwrap();
        let dir = tmp.path();
        super::write_all(dir).unwrap();
        for name in [
            "rttfairctl",
            "rttfairctl-load",
            "rttfairctl-daemon",
            "rttfairctl-lab-run",
        ] {
            let text = std::fs::read_to_string(dir.join(format!("{name}.1"))).unwrap();
            assert!(
                text.starts_with(".ie") || text.contains(".TH"),
                "{name}: {text}"
            );
            assert!(text.contains(name), "{name}");
        }
        assert!(
            !dir.join("rttfairctl-man.1").exists(),
            "hidden command got a page"
        );
    }
}
