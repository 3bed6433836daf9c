//! Where rttfair keeps its kernel objects: a directory on bpffs.
//!
//! ```text
//! /sys/fs/bpf/rttfair/        root (mode 0700)
//!   links/<cca>               pinned struct_ops link: the CCA stays registered
//!   maps/<map>_v<abi>         shared maps, pinned by name by libbpf
//! ```
//! The root can be moved with `RTTFAIR_BPFFS` (tests use a private root).

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use libbpf_rs::MapHandle;
use nix::fcntl::{Flock, FlockArg};

use crate::cca::Cca;
use crate::error::{Error, Result};

/// `statfs(2)` magic of bpffs.
const BPF_FS_MAGIC: i64 = 0xcafe4a11;
/// Where bpffs is conventionally mounted.
const BPFFS_MOUNTPOINT: &str = "/sys/fs/bpf";

/// How long a command waits for another holder of the installation lock
/// before it gives up with [`Error::Busy`].
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The bpffs directory tree of one rttfair installation.
#[derive(Debug, Clone)]
pub struct BpfFs {
    root: PathBuf,
}

/// Holds the installation lock; released on drop (also when the process dies).
#[derive(Debug)]
pub struct LockGuard {
    _flock: Flock<File>,
}

impl BpfFs {
    /// The default root.
    pub const DEFAULT_ROOT: &'static str = "/sys/fs/bpf/rttfair";

    /// An installation rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        BpfFs { root: root.into() }
    }

    /// `$RTTFAIR_BPFFS` or the default root.
    pub fn from_env() -> Self {
        match std::env::var_os("RTTFAIR_BPFFS") {
            Some(p) if !p.is_empty() => BpfFs::new(p),
            _ => BpfFs::new(Self::DEFAULT_ROOT),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Directory libbpf pins the shared maps in (`pin_root_path`).
    pub fn maps_dir(&self) -> PathBuf {
        self.root.join("maps")
    }

    pub fn links_dir(&self) -> PathBuf {
        self.root.join("links")
    }

    /// The pinned struct_ops link of a CCA.
    pub fn link_pin(&self, cca: Cca) -> PathBuf {
        self.links_dir().join(cca.name())
    }

    /// A shared map's pin.
    pub fn map_pin(&self, map: &str) -> PathBuf {
        self.maps_dir().join(map)
    }

    /// Open a pinned shared map by name (one of [`crate::abi::maps`]), with
    /// a clear error if nothing was ever loaded or this user may not read it.
    pub fn open_map(&self, name: &str) -> Result<MapHandle> {
        self.check_access(&format!("reading {name}"))?;
        let path = self.map_pin(name);
        if !path.exists() {
            return Err(Error::NothingLoaded { path });
        }
        MapHandle::from_pinned_path(&path).map_err(|e| match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => Error::NotPrivileged {
                what: format!("reading {}", path.display()),
                missing: "CAP_BPF (or read access to bpffs)".into(),
            },
            _ => Error::bpf(format!("open {}", path.display()), e),
        })
    }

    /// Can this process see inside the tree? (It is 0700: root only.)
    pub fn check_access(&self, what: &str) -> Result<()> {
        match fs::read_dir(&self.root) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Err(Error::NotPrivileged {
                    what: what.to_string(),
                    missing: format!("CAP_BPF and access to {} (root only)", self.root.display()),
                })
            }
            _ => Ok(()),
        }
    }

    /// Is the installation's root present at all (nothing was ever loaded if not)?
    pub fn exists(&self) -> bool {
        self.root.is_dir()
    }

    /// Make sure the tree exists on a mounted bpffs, mounting bpffs at
    /// /sys/fs/bpf if the root would live there and nothing is mounted.
    pub fn ensure(&self) -> Result<()> {
        if self.root.starts_with(BPFFS_MOUNTPOINT) && !is_bpffs(Path::new(BPFFS_MOUNTPOINT)) {
            mount_bpffs(Path::new(BPFFS_MOUNTPOINT)).map_err(|reason| Error::Bpffs {
                path: BPFFS_MOUNTPOINT.into(),
                reason,
            })?;
        }
        let anchor = nearest_existing(&self.root);
        if !is_bpffs(&anchor) {
            return Err(Error::Bpffs {
                path: self.root.clone(),
                reason: format!("{} is not on a bpf filesystem", anchor.display()),
            });
        }
        for dir in [self.root.clone(), self.maps_dir(), self.links_dir()] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| Error::Bpffs {
                    path: dir.clone(),
                    reason: e.to_string(),
                })?;
        }
        Ok(())
    }

    /// Take the installation lock, waiting up to `wait` for another holder.
    /// bpffs holds no regular files, so the lock is a flock on the root
    /// directory itself; the kernel drops it when the holder dies. The last
    /// unload removes that directory while holding the lock, so a lock won
    /// on a directory that is no longer the root (removed, or removed and
    /// made again by another command) is dropped and taken again on the
    /// current one: two holders can never both pass. The lock stays on
    /// bpffs, not under /run, because bpffs is what every rttfairctl of the
    /// installation shares: a daemon's container sees the host's bpffs, not
    /// its /run. A missing root is [`Error::NothingLoaded`].
    pub fn lock(&self, wait: Duration) -> Result<LockGuard> {
        self.lock_with(wait, || Ok(()))
    }

    /// [`BpfFs::ensure`] the tree, then [`BpfFs::lock`] it, making the tree
    /// again if another command removed it meanwhile: what a command that
    /// creates pins takes.
    pub fn ensure_and_lock(&self, wait: Duration) -> Result<LockGuard> {
        self.lock_with(wait, || self.ensure())
    }

    fn lock_with(&self, wait: Duration, prepare: impl Fn() -> Result<()>) -> Result<LockGuard> {
        let path = self.root.clone();
        let deadline = Instant::now() + wait;
        loop {
            prepare()?;
            let file = match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::NothingLoaded { path })
                }
                Err(e) => return Err(Error::io(format!("open {}", path.display()), e)),
            };
            let busy = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(flock) if is_same_dir(&flock, &path) => return Ok(LockGuard { _flock: flock }),
                Ok(_stale) => false, // unlocked on drop; try the current root
                Err(_) => true,
            };
            if Instant::now() >= deadline {
                return Err(Error::Busy { path });
            }
            if busy {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Remove the tree if nothing remains in it.
    pub fn remove_if_empty(&self) {
        for dir in [self.maps_dir(), self.links_dir(), self.root.clone()] {
            let _ = fs::remove_dir(dir); // fails, harmlessly, if not empty
        }
    }
}

/// Is the open directory `file` the one at `path` now (same device and inode)?
fn is_same_dir(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn nearest_existing(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    while !p.exists() {
        if !p.pop() {
            return PathBuf::from("/");
        }
    }
    p
}

/// Whether `path` lives on bpffs.
pub fn is_bpffs(path: &Path) -> bool {
    nix::sys::statfs::statfs(path)
        .map(|s| s.filesystem_type().0 == BPF_FS_MAGIC)
        .unwrap_or(false)
}

fn mount_bpffs(target: &Path) -> std::result::Result<(), String> {
    use nix::mount::{mount, MsFlags};
    fs::create_dir_all(target).map_err(|e| e.to_string())?;
    mount(
        Some("bpf"),
        target,
        Some("bpf"),
        MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| format!("mount -t bpf failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last unload removes the root while holding its lock, and another
    /// command makes it again: a waiter that then wins the lock on the
    /// removed directory must not pass alongside a holder of the new one.
    /// (flock needs no bpffs, so a temporary directory stands in.)
    #[test]
    fn the_lock_is_never_held_twice_across_a_removed_and_remade_root() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = BpfFs::new(tmp.path().join("root"));
        std::fs::create_dir(fs.root()).unwrap();
        let a = fs.lock(Duration::ZERO).unwrap();
        let waiter = {
            let fs = fs.clone();
            std::thread::spawn(move || {
                fs.lock(Duration::from_secs(2)).map(|g| {
                    // hold it long enough for the main thread's attempt to overlap
                    std::thread::sleep(Duration::from_millis(300));
                    drop(g);
                })
            })
        };
        std::thread::sleep(Duration::from_millis(100)); // the waiter has the old root open
        fs.remove_if_empty();
        assert!(!fs.root().exists());
        drop(a);
        std::fs::create_dir(fs.root()).unwrap();
        let c = fs.lock(Duration::ZERO);
        let waited = waiter.join().unwrap();
        assert!(
            !(c.is_ok() && waited.is_ok()),
            "both the waiter and the new root's locker held the lock"
        );
        // and the new root is lockable once both let go
        drop(c);
        fs.lock(Duration::ZERO).unwrap();
    }

    /// A root that is gone is "nothing loaded", not an I/O error.
    #[test]
    fn locking_a_missing_root_says_nothing_is_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = BpfFs::new(tmp.path().join("absent"));
        let e = fs.lock(Duration::ZERO).unwrap_err();
        assert!(matches!(e, Error::NothingLoaded { .. }), "{e}");
    }
}
