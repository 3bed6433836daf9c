//! Files written whole or not at all, for every file the lab stores
//! (results folders, provenance, the CCA lease records).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Write `path` whole or not at all: `fill` writes into a temp file in
/// the same folder, which is synced and then renamed over `path`.
///
/// Why: a stored summary cannot always be computed again (`lab
/// resummarize` keeps goodput and utilization as stored), so an
/// interruption (Ctrl-C, SIGTERM, ENOSPC, a crash) between truncating the
/// old file and its last byte must not leave it cut short. A failed or
/// interrupted write leaves the old file as it was (an interrupted one at
/// most a stray `.<name>.*.tmp` beside it, which no reader looks at).
/// The new file keeps an existing file's mode and, where the process may,
/// its owner (as an in-place write would); a new one gets 0666 less the
/// umask, as `std::fs::write` gives.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> Result<()>,
) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let what = || format!("write {}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let old = std::fs::metadata(path).ok();
    let mode = old
        .as_ref()
        .map(|m| m.permissions())
        .unwrap_or_else(|| std::fs::Permissions::from_mode(0o666));
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(mode)
        .tempfile_in(dir)
        .with_context(what)?;
    if let Some(m) = &old {
        // Best effort: only root may give a file away, and a file the
        // process could write in place is one it may replace as its own.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()));
    }
    fill(tmp.as_file_mut()).with_context(what)?;
    tmp.as_file().sync_all().with_context(what)?;
    tmp.persist(path).map_err(|e| e.error).with_context(what)?;
    Ok(())
}

/// `bytes` as the whole of `path`, by [`write_atomic`].
pub(crate) fn write_file(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    write_atomic(path, |f| Ok(f.write_all(bytes.as_ref())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails midway (here its serialisation, after the
    /// first bytes are out) leaves the file as it was and nothing beside
    /// it; a write that succeeds replaces it whole, keeping its mode.
    /// Written in place, the file was already truncated at the failure.
    #[test]
    fn a_failed_write_leaves_the_old_file() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = crate::testkit::temp_folder("files-atomic");
        let path = tmp.path().join("summary.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = write_atomic(&path, |f| {
            f.write_all(b"{\"half\": ")?;
            anyhow::bail!("cannot serialise NaN")
        })
        .unwrap_err();
        assert!(format!("{e:#}").contains("summary.json"), "{e:#}");
        assert!(format!("{e:#}").contains("NaN"), "{e:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        write_file(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
