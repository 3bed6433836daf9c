//! Per-cgroup default congestion control: a pinned cgroup sock_ops link
//! (`bpf/cgroup_cca.bpf.c`) that sets the CCA of every connection the
//! cgroup's processes open or accept.
//!
//! Pins live at `<root>/cgroups/<cca>@<cgroup path with / as %>` so that
//! `list` can tell what each attachment sets without loading anything.

use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::bpffs::BpfFs;
use crate::error::{Error, Result};
use crate::kernel;

skeleton!(skel, "cgroup_cca.skel.rs");

/// One attachment.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Attachment {
    pub cgroup: PathBuf,
    pub cca: String,
}

fn dir(fs: &BpfFs) -> PathBuf {
    fs.root().join("cgroups")
}

/// The cgroup path as one bpffs name: '/' cannot be in a name, and bpffs
/// refuses any name with a '.' (EPERM), which systemd's `.slice` and
/// `.scope` cgroups all have.
fn escape(p: &Path) -> String {
    p.to_string_lossy()
        .replace('%', "%25")
        .replace('/', "%2F")
        .replace('.', "%2E")
}

/// The longest name a bpffs directory entry may have (NAME_MAX).
const PIN_NAME_MAX: usize = 255;

/// The pin name of `cca` set on the cgroup at `canonical`, refused when
/// bpffs cannot hold it (a deeply nested cgroup, e.g. a pod's scope under
/// systemd's slices): checked before anything is loaded or replaced.
fn pin_name(cca: &str, canonical: &Path) -> Result<String> {
    let name = format!("{cca}@{}", escape(canonical));
    if name.len() > PIN_NAME_MAX {
        return Err(Error::InvalidValue {
            name: "--cgroup".into(),
            reason: format!(
                "{} is too deep to attach {cca}: its pin name would be {} bytes, and bpffs names end at {PIN_NAME_MAX}",
                canonical.display(),
                name.len()
            ),
        });
    }
    Ok(name)
}

fn unescape(s: &str) -> PathBuf {
    PathBuf::from(
        s.replace("%2F", "/")
            .replace("%2E", ".")
            .replace("%25", "%"),
    )
}

/// Every attachment of this installation.
pub fn list(fs: &BpfFs) -> Vec<Attachment> {
    let mut out: Vec<Attachment> = std::fs::read_dir(dir(fs))
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().into_string().ok()?;
                    let (cca, path) = n.split_once('@')?;
                    Some(Attachment {
                        cgroup: unescape(path),
                        cca: cca.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.cgroup.cmp(&b.cgroup));
    out
}

/// Attach `cca` as the default of `cgroup` (replacing an earlier attachment
/// of this installation on the same cgroup).
pub fn attach(fs: &BpfFs, cgroup: &Path, cca: &str) -> Result<()> {
    crate::preflight::require(
        "attaching a cgroup default",
        crate::preflight::ATTACH_CGROUP,
    )?;
    let cg = std::fs::File::open(cgroup)
        .map_err(|e| Error::io(format!("cgroup {}", cgroup.display()), e))?;
    if !cg.metadata().map(|m| m.is_dir()).unwrap_or(false) || !cgroup.join("cgroup.procs").exists()
    {
        return Err(Error::InvalidValue {
            name: "--cgroup".into(),
            reason: format!("{} is not a cgroup v2 directory", cgroup.display()),
        });
    }
    if cca.is_empty() || cca.len() > 15 {
        return Err(Error::InvalidValue {
            name: "cca".into(),
            reason: format!("'{cca}' is not a CCA name"),
        });
    }
    if !kernel::is_registered(cca)? {
        return Err(Error::NotLoaded {
            cca: cca.to_string(),
        });
    }
    fs.ensure()?;
    let canonical =
        std::fs::canonicalize(cgroup).map_err(|e| Error::io("canonicalize cgroup", e))?;
    let pin = dir(fs).join(pin_name(cca, &canonical)?);
    let mut storage = MaybeUninit::uninit();
    let mut open = skel::CgroupCcaSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| Error::bpf("open cgroup program", e))?;
    let ro = open.maps.rodata_data.as_deref_mut().expect("rodata");
    for (o, b) in ro.cca.iter_mut().zip(cca.bytes()) {
        *o = b as i8;
    }
    ro.cca_len = cca.len() as u32;
    let skel = open
        .load()
        .map_err(|e| Error::bpf("load cgroup program", e))?;
    let mut link = skel
        .progs
        .cgroup_set_cca
        .attach_cgroup(cg.as_raw_fd())
        .map_err(|e| Error::bpf(format!("attach to {}", cgroup.display()), e))?;
    std::fs::create_dir_all(dir(fs)).map_err(|e| Error::io("create cgroups pin dir", e))?;
    // Replace an earlier attachment on this cgroup only once the new one is
    // pinned: under a temporary name (no '@', so `list` skips it; no '.',
    // which bpffs refuses), renamed
    // into place (over an earlier attachment of the same CCA), and only then
    // the others removed. A failure before that leaves the earlier one, and
    // drops the new link, which detaches it.
    let previous: Vec<PathBuf> = list(fs)
        .into_iter()
        .filter(|a| a.cgroup == canonical)
        .map(|a| dir(fs).join(format!("{}@{}", a.cca, escape(&a.cgroup))))
        .filter(|p| *p != pin)
        .collect();
    let temp = dir(fs).join(format!("attaching-{}", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    link.pin(&temp)
        .map_err(|e| Error::bpf(format!("pin {}", temp.display()), e))?;
    if let Err(e) = std::fs::rename(&temp, &pin) {
        let _ = std::fs::remove_file(&temp);
        return Err(Error::io(format!("pin {}", pin.display()), e));
    }
    for p in &previous {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// Remove this installation's attachment on `cgroup`.
pub fn detach(fs: &BpfFs, cgroup: &Path) -> Result<String> {
    crate::preflight::require(
        "detaching a cgroup default",
        crate::preflight::ATTACH_CGROUP,
    )?;
    let canonical = std::fs::canonicalize(cgroup)
        .map_err(|e| Error::io(format!("cgroup {}", cgroup.display()), e))?;
    let found: Vec<Attachment> = list(fs)
        .into_iter()
        .filter(|a| a.cgroup == canonical)
        .collect();
    if found.is_empty() {
        return Err(Error::InvalidValue {
            name: "--cgroup".into(),
            reason: format!("no rttfair attachment on {}", canonical.display()),
        });
    }
    for a in &found {
        let pin = dir(fs).join(format!("{}@{}", a.cca, escape(&a.cgroup)));
        std::fs::remove_file(&pin)
            .map_err(|e| Error::io(format!("remove {}", pin.display()), e))?;
    }
    let _ = std::fs::remove_dir(dir(fs));
    Ok(found[0].cca.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod scope under systemd's kubelet slices is deep enough that its
    /// pin name passes bpffs's 255 bytes for a long CCA name but not for a
    /// short one: the long one is refused naming the limit, before loading.
    #[test]
    fn a_pin_name_past_bpffs_limit_is_refused_naming_it() {
        let pod = "/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod0123456789ab.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope";
        let path = Path::new(pod);
        let short = pin_name("bbr1", path).unwrap();
        assert!(short.len() <= PIN_NAME_MAX, "{}", short.len());
        assert!(
            !short.contains('.'),
            "bpffs refuses a name with a dot: {short}"
        );
        assert_eq!(unescape(short.split_once('@').unwrap().1), path);
        let odd = Path::new("/a%2E.b%/c");
        assert_eq!(unescape(&escape(odd)), odd);
        let e = pin_name("bbr_native", path).unwrap_err().to_string();
        assert!(e.contains("255") && e.contains("--cgroup"), "{e}");
        // Exactly at the limit is fine.
        let at = "a".repeat(PIN_NAME_MAX - "x@".len());
        assert_eq!(pin_name("x", Path::new(&at)).unwrap().len(), PIN_NAME_MAX);
        assert!(pin_name("xy", Path::new(&at)).is_err());
    }
}
