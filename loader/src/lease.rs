//! The files by which labs share a project CCA with each other, the daemon
//! and the operator (the lab's sessions that hold them live in the lab's
//! `ccas` module).
//!
//! Under `/run/rttfair/lab-leases/<installation>/`, per CCA:
//! - `<cca>.lease`: its flock is a lab's lease (shared while a lab uses the
//!   CCA; whoever unloads it takes it exclusively first);
//! - `<cca>.loaded-by-lab`: the marker, there while a lab, not the
//!   operator, loaded it (the last lab out unloads it);
//! - `<cca>.loaded-object-sha256` and `<cca>.loaded-tunables`: beside the
//!   marker, what that lab loaded and the scenario tunables it set.
//!
//! The operator (`rttfairctl load`, `swap`, the daemon) takes a CCA over
//! with [`adopt`]: from then on no lab unloads it.

use std::path::{Path, PathBuf};

use crate::{BpfFs, Cca, Error, Result};

/// Where lab leases live; one folder per installation (bpffs root).
const LEASE_ROOT: &str = "/run/rttfair/lab-leases";

/// The folder holding the leases of the installation at `fs`.
pub fn lease_dir(fs: &BpfFs) -> PathBuf {
    let key = fs
        .root()
        .to_string_lossy()
        .trim_matches('/')
        .replace('/', "_");
    Path::new(LEASE_ROOT).join(key)
}

/// The file whose flock is a lab's lease on `cca` (shared while a lab uses
/// it; whoever unloads it takes it exclusively first).
pub fn lease_path(fs: &BpfFs, cca: Cca) -> PathBuf {
    lease_dir(fs).join(format!("{cca}.lease"))
}

/// The marker that says a lab, not the operator, loaded `cca`.
pub fn marker(fs: &BpfFs, cca: Cca) -> PathBuf {
    lease_dir(fs).join(format!("{cca}.loaded-by-lab"))
}

/// Beside the marker: the SHA-256 of the object the lab that loaded `cca`
/// registered, so a lab that finds it loaded records what it runs.
pub fn object_record(fs: &BpfFs, cca: Cca) -> PathBuf {
    lease_dir(fs).join(format!("{cca}.loaded-object-sha256"))
}

/// Beside the marker: the scenario tunables the lab that loaded `cca` set
/// on it (TOML, empty: none), written before the load, so a lab that finds
/// it registered runs it only with the same ones.
pub fn tunables_record(fs: &BpfFs, cca: Cca) -> PathBuf {
    lease_dir(fs).join(format!("{cca}.loaded-tunables"))
}

/// The operator asked for `cca` while a lab had loaded it: from now on it is
/// the operator's, and no lab unloads it. Returns whether a lab had loaded it
/// (no marker: no lab did). Any other failure to remove the marker (a
/// read-only /run, say) is an error, because the lab that loaded `cca`
/// will then unload it under its new owner when it ends.
pub fn adopt(fs: &BpfFs, cca: Cca) -> Result<bool> {
    let adopted = remove_marker(cca, &marker(fs, cca))?;
    // The operator may swap or retune it from now on: no lab can vouch
    // for which object it runs or its tunables (without the marker the
    // records are not read anyway).
    let _ = std::fs::remove_file(object_record(fs, cca));
    let _ = std::fs::remove_file(tunables_record(fs, cca));
    Ok(adopted)
}

/// [`adopt`]'s step: remove the marker `m` that says a lab loaded `cca`.
fn remove_marker(cca: Cca, m: &Path) -> Result<bool> {
    match std::fs::remove_file(m) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::Adopt {
            cca: cca.to_string(),
            path: m.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::Cca;

    /// Taking a CCA over from a lab: a marker removed is "a lab loaded it",
    /// no marker is "no lab did", and a marker that cannot be removed (here
    /// a directory in its place; under the shipped unit it was a read-only
    /// /run) is an error naming it, not "no lab did".
    #[test]
    fn a_marker_that_cannot_be_removed_is_an_error_not_no_lab() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("qfair.loaded-by-lab");
        assert!(!super::remove_marker(Cca::Qfair, &m).unwrap());
        std::fs::write(&m, "").unwrap();
        assert!(super::remove_marker(Cca::Qfair, &m).unwrap());
        assert!(!m.exists());
        std::fs::create_dir(&m).unwrap();
        let e = super::remove_marker(Cca::Qfair, &m)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot take qfair over from the lab"), "{e}");
        assert!(e.contains(&m.display().to_string()), "{e}");
        assert!(e.ends_with("; that lab will unload it when it ends"), "{e}");
    }

    /// Every file of a CCA's lease sits in its installation's folder, named
    /// after the CCA, so two installations never share a lease.
    #[test]
    fn lease_files_are_per_installation_and_cca() {
        let a = crate::BpfFs::new("/sys/fs/bpf/rttfair");
        let b = crate::BpfFs::new("/tmp/x/bpffs");
        assert_eq!(
            super::lease_dir(&a),
            std::path::Path::new("/run/rttfair/lab-leases/sys_fs_bpf_rttfair")
        );
        assert_ne!(super::lease_dir(&a), super::lease_dir(&b));
        let files = [
            super::lease_path(&a, Cca::Qfair),
            super::marker(&a, Cca::Qfair),
            super::object_record(&a, Cca::Qfair),
            super::tunables_record(&a, Cca::Qfair),
        ];
        for f in &files {
            assert_eq!(f.parent(), Some(super::lease_dir(&a).as_path()));
            assert!(f
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("qfair."));
        }
        assert_ne!(files[0], super::lease_path(&a, Cca::Fairtt));
    }
}
