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

fn escape(p: &Path) -> String {
    p.to_string_lossy().replace('%', "%25").replace('/', "%2F")
}

fn unescape(s: &str) -> PathBuf {
    PathBuf::from(s.replace("%2F", "/").replace("%25", "%"))
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
    // Replace an earlier attachment on this cgroup only once the new one is live.
    let previous: Vec<PathBuf> = list(fs)
        .into_iter()
        .filter(|a| a.cgroup == canonical)
        .map(|a| dir(fs).join(format!("{}@{}", a.cca, escape(&a.cgroup))))
        .collect();
    let pin = dir(fs).join(format!("{cca}@{}", escape(&canonical)));
    for p in &previous {
        let _ = std::fs::remove_file(p);
    }
    link.pin(&pin)
        .map_err(|e| Error::bpf(format!("pin {}", pin.display()), e))?;
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
