//! `rttfairctl doctor`: can this host run rttfair, and if not, what to do.
//!
//! Each check is one line, `ok` or `missing: what, and how to fix it`. The
//! kernel features are probed in the kernel's own BTF (a distribution
//! kernel may carry a feature below the version that introduced it); the
//! release number is the fallback and the explanation. The floor, with the
//! release that introduced each feature (upstream history; the probes, not
//! these numbers, decide):
//!
//! | feature | since | probe (vmlinux BTF) |
//! |---|---|---|
//! | `cong_control(sk, ack, flag, rs)`, every CCA here | 6.10 | `tcp_congestion_ops.cong_control` has 4 parameters |
//! | `.struct_ops.link`, link update (swap) | 6.4 | `enum bpf_link_type` has `BPF_LINK_TYPE_STRUCT_OPS` |
//! | `bpf_ktime_get_tai_ns` (qfair's drains) | 6.1 | function `bpf_ktime_get_tai_ns` |
//! | `bpf_loop` (fairtt, adbbr) | 5.17 | function `bpf_loop` |
//! | `iter/tcp` with `bpf_setsockopt` (migrate, native flows) | 5.15 | struct `bpf_iter__tcp` |
//! | native bbr's kfuncs (`bbr_native`) | 5.13, `bbr_main` with 4 arguments 6.10 | functions `bbr_init`, `bbr_main`, ... (vmlinux, or module `tcp_bbr`) |
//!
//! Every input (kernel release, BTF path, capabilities, PATH, bpffs state)
//! comes from [`Inputs`], so tests feed a lower kernel or a PATH without
//! iperf3 and check the exact line.

mod btf;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::preflight::{self, Cap};
use btf::Btf;

/// The oldest kernel every rttfair CCA runs on: the 4-argument
/// `cong_control` of `tcp_congestion_ops`.
pub const FLOOR: (u32, u32) = (6, 10);

/// The lab's command-line tools, each with what it is for.
pub const LAB_TOOLS: &[(&str, &str)] = &[
    ("iperf3", "the lab's traffic"),
    ("ss", "socket statistics"),
    ("tc", "the bottleneck's qdiscs"),
    ("ip", "namespaces, veth and routes"),
    ("ethtool", "offloads off on emulated links"),
];

/// Native bbr's functions that `bbr_native` calls as kfuncs.
const BBR_KFUNCS: &[&str] = &[
    "bbr_init",
    "bbr_main",
    "bbr_sndbuf_expand",
    "bbr_undo_cwnd",
    "bbr_cwnd_event",
    "bbr_ssthresh",
    "bbr_min_tso_segs",
    "bbr_set_state",
];

/// What the checks are for: everything, or one use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every check (plain `doctor`).
    All,
    /// Loading CCAs; `bbr_native` says whether native bbr's kfuncs matter.
    Load { bbr_native: bool },
    /// The metrics daemon (maps, the socket iterator).
    Daemon,
    /// The lab: loads CCAs, builds namespaces and qdiscs, runs the tools.
    Lab,
}

impl Scope {
    /// The capabilities this use needs (preflight has the measurements).
    fn caps(self) -> Vec<Cap> {
        match self {
            Scope::Load { .. } => preflight::REGISTER.to_vec(),
            Scope::Daemon => preflight::ITERATE_SOCKETS.to_vec(),
            // Namespaces and qdiscs: CAP_SYS_ADMIN and CAP_NET_ADMIN.
            Scope::All | Scope::Lab => vec![Cap::Bpf, Cap::Perfmon, Cap::NetAdmin, Cap::SysAdmin],
        }
    }

    fn loads(self) -> bool {
        matches!(self, Scope::All | Scope::Load { .. } | Scope::Lab)
    }
}

/// What the checks read, gathered by [`Inputs::from_host`] or made up by a test.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `uname -r`.
    pub kernel_release: String,
    /// The kernel's BTF (vmlinux).
    pub btf: PathBuf,
    /// Where module BTF lives (`/sys/kernel/btf`): `tcp_bbr` if bbr is a module.
    pub module_btf_dir: PathBuf,
    /// The effective capability set.
    pub caps: u64,
    /// `$PATH`, where the tools are looked up.
    pub path: OsString,
    /// rttfair's bpffs root (`--bpffs`).
    pub bpffs_root: PathBuf,
    /// Is the root (or its nearest existing parent) on bpffs?
    pub root_on_bpffs: bool,
    /// Is bpffs mounted at /sys/fs/bpf?
    pub mountpoint_mounted: bool,
}

const MOUNTPOINT: &str = "/sys/fs/bpf";

impl Inputs {
    /// This host's. `RTTFAIR_DOCTOR_KERNEL_RELEASE` stands in for the
    /// kernel release and `RTTFAIR_KERNEL_BTF` for the BTF path (to test
    /// the refusals on a host that passes).
    pub fn from_host(bpffs_root: &Path) -> Inputs {
        let kernel_release = match std::env::var("RTTFAIR_DOCTOR_KERNEL_RELEASE") {
            Ok(r) if !r.is_empty() => r,
            _ => std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        };
        let btf = std::env::var_os("RTTFAIR_KERNEL_BTF")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(preflight::VMLINUX_BTF));
        let mut anchor = bpffs_root.to_path_buf();
        while !anchor.exists() && anchor.pop() {}
        Inputs {
            kernel_release,
            btf,
            module_btf_dir: PathBuf::from("/sys/kernel/btf"),
            caps: preflight::effective_caps(),
            path: std::env::var_os("PATH").unwrap_or_default(),
            bpffs_root: bpffs_root.to_path_buf(),
            root_on_bpffs: crate::bpffs::is_bpffs(&anchor),
            mountpoint_mounted: crate::bpffs::is_bpffs(Path::new(MOUNTPOINT)),
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked, e.g. `kernel`, `tool iperf3`.
    pub check: String,
    pub ok: bool,
    /// What was found (ok), or what is missing and how to fix it.
    pub detail: String,
}

impl Check {
    fn ok(check: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            ok: true,
            detail: detail.into(),
        }
    }

    fn missing(check: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            check: check.into(),
            ok: false,
            detail: detail.into(),
        }
    }

    /// The line `doctor` prints: `<check>: ok (<detail>)` or
    /// `<check>: missing: <detail>`.
    pub fn line(&self) -> String {
        if self.ok {
            format!("{}: ok ({})", self.check, self.detail)
        } else {
            format!("{}: missing: {}", self.check, self.detail)
        }
    }
}

/// Every check `scope` needs, in the order they are printed (capabilities
/// first: without them the rest is moot).
pub fn run(inputs: &Inputs, scope: Scope) -> Vec<Check> {
    let btf = Btf::read(&inputs.btf);
    let mut out = vec![capabilities(inputs.caps, scope)];
    let features = feature_checks(btf.as_ref().ok(), scope);
    out.push(kernel(&inputs.kernel_release, btf.is_ok(), &features));
    out.push(match &btf {
        Ok(_) => Check::ok("btf", inputs.btf.display().to_string()),
        Err(_) if !inputs.btf.exists() => Check::missing(
            "btf",
            format!(
                "no BTF at {}: rttfair needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
                inputs.btf.display()
            ),
        ),
        Err(e) => Check::missing("btf", format!("{e}: rttfair needs the kernel's BTF")),
    });
    out.extend(features);
    let bbr = match scope {
        Scope::All | Scope::Load { bbr_native: true } => {
            Some(bbr_kfuncs(btf.as_ref().ok(), inputs))
        }
        _ => None,
    };
    out.extend(bbr);
    out.push(bpffs(inputs));
    if matches!(scope, Scope::All | Scope::Lab) {
        out.extend(LAB_TOOLS.iter().map(|(t, why)| tool(&inputs.path, t, why)));
    }
    out
}

/// The first failed check's line, if any: what `load` refuses with.
pub fn first_missing(checks: &[Check]) -> Option<String> {
    checks.iter().find(|c| !c.ok).map(Check::line)
}

fn capabilities(caps: u64, scope: Scope) -> Check {
    let needed = scope.caps();
    let names = |cs: &[Cap]| cs.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ");
    let missing = preflight::missing_in(caps, &needed);
    if missing.is_empty() {
        Check::ok("capabilities", names(&needed))
    } else {
        Check::missing(
            "capabilities",
            format!(
                "{} (run as root, or grant them, e.g. systemd AmbientCapabilities=)",
                missing
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )
    }
}

/// `6.10.3-arch1` -> (6, 10).
fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn kernel(release: &str, have_btf: bool, features: &[Check]) -> Check {
    let floor = format!("{}.{}", FLOOR.0, FLOOR.1);
    let all_present = have_btf && features.iter().all(|c| c.ok);
    match parse_release(release) {
        Some(v) if v >= FLOOR => Check::ok("kernel", format!("Linux {release}, floor {floor}")),
        Some(_) if all_present => Check::ok(
            "kernel",
            format!("Linux {release} is below {floor}, but its BTF has every feature rttfair uses (backported)"),
        ),
        Some(_) => Check::missing(
            "kernel",
            format!(
                "Linux {release} is older than {floor}, the first with the 4-argument cong_control every rttfair CCA implements: upgrade to Linux {floor} or later"
            ),
        ),
        None if all_present => Check::ok(
            "kernel",
            format!("release {release:?} not understood; its BTF has every feature rttfair uses"),
        ),
        None => Check::missing(
            "kernel",
            format!("release {release:?} not understood and the BTF probes failed: rttfair needs Linux {floor} or later"),
        ),
    }
}

/// The kernel features the CCAs (and the iterator) use, probed in BTF.
fn feature_checks(btf: Option<&Btf>, scope: Scope) -> Vec<Check> {
    let mut out = Vec::new();
    let unknown =
        |name: &str| Check::missing(name, "cannot probe without the kernel's BTF (see btf)");
    if scope.loads() {
        out.push(match btf {
            None => unknown("struct_ops"),
            Some(b) => match b.member_fn_params("tcp_congestion_ops", "cong_control") {
                Some(4) => Check::ok("struct_ops", "tcp_congestion_ops with cong_control(sk, ack, flag, rs)"),
                Some(n) => Check::missing(
                    "struct_ops",
                    format!("tcp_congestion_ops.cong_control takes {n} arguments here; rttfair's CCAs need the 4-argument one of Linux 6.10: upgrade the kernel"),
                ),
                None if b.has_struct("tcp_congestion_ops") => Check::missing(
                    "struct_ops",
                    "tcp_congestion_ops has no cong_control: upgrade to Linux 6.10 or later",
                ),
                None => Check::missing(
                    "struct_ops",
                    "the kernel has no tcp_congestion_ops in its BTF (CONFIG_BPF_JIT, CONFIG_BPF_SYSCALL, TCP congestion control): use a kernel with BPF struct_ops, Linux 6.10 or later",
                ),
            },
        });
        out.push(match btf {
            None => unknown("struct_ops link"),
            Some(b) if b.has_enum_value("bpf_link_type", "BPF_LINK_TYPE_STRUCT_OPS") => Check::ok(
                "struct_ops link",
                "BPF_LINK_TYPE_STRUCT_OPS: links and in-place swap",
            ),
            Some(_) => Check::missing(
                "struct_ops link",
                "no BPF_LINK_TYPE_STRUCT_OPS (.struct_ops.link, swap): needs Linux 6.4 or later",
            ),
        });
        let helpers = [
            ("bpf_ktime_get_tai_ns", "6.1", "qfair"),
            ("bpf_loop", "5.17", "fairtt, adbbr"),
        ];
        out.push(match btf {
            None => unknown("helpers"),
            Some(b) => {
                let absent: Vec<String> = helpers
                    .iter()
                    .filter(|(f, ..)| !b.has_func(f))
                    .map(|(f, v, who)| format!("{f} ({who}; Linux {v})"))
                    .collect();
                if absent.is_empty() {
                    Check::ok("helpers", "bpf_ktime_get_tai_ns, bpf_loop")
                } else {
                    Check::missing(
                        "helpers",
                        format!("{}: upgrade the kernel", absent.join(", ")),
                    )
                }
            }
        });
    }
    if matches!(scope, Scope::All | Scope::Daemon) {
        out.push(match btf {
            None => unknown("iter/tcp"),
            Some(b) if b.has_struct("bpf_iter__tcp") => {
                Check::ok("iter/tcp", "socket iterator (migrate, native flows)")
            }
            Some(_) => Check::missing(
                "iter/tcp",
                "no TCP socket iterator (bpf_iter__tcp) for migrate and native flows: needs Linux 5.15 or later",
            ),
        });
    }
    out
}

/// Native bbr's functions, in vmlinux's BTF or in the `tcp_bbr` module's.
fn bbr_kfuncs(vmlinux: Option<&Btf>, inputs: &Inputs) -> Check {
    const NAME: &str = "bbr kfuncs";
    let Some(vmlinux) = vmlinux else {
        return Check::missing(NAME, "cannot probe without the kernel's BTF (see btf)");
    };
    let judge = |b: &Btf, wher: &str| -> Check {
        let absent: Vec<&str> = BBR_KFUNCS
            .iter()
            .copied()
            .filter(|f| !b.has_func(f))
            .collect();
        if !absent.is_empty() {
            return Check::missing(
                NAME,
                format!(
                    "{} not in {wher}: bbr_native cannot call native bbr",
                    absent.join(", ")
                ),
            );
        }
        match b.func_params("bbr_main") {
            Some(4) => Check::ok(NAME, format!("bbr_init, bbr_main(sk, ack, flag, rs), ... in {wher}")),
            n => Check::missing(
                NAME,
                format!("bbr_main takes {} arguments in {wher}; bbr_native needs the 4-argument one of Linux 6.10", n.unwrap_or(0)),
            ),
        }
    };
    if vmlinux.has_func("bbr_main") {
        return judge(vmlinux, "vmlinux");
    }
    let module = inputs.module_btf_dir.join("tcp_bbr");
    if !module.exists() {
        return Check::missing(
            NAME,
            "native bbr is not in the kernel's BTF: load its module (modprobe tcp_bbr) or use a kernel with CONFIG_TCP_CONG_BBR; only bbr_native needs it",
        );
    }
    match Btf::read(&inputs.btf).and_then(|base| Btf::read_split(&module, base)) {
        Ok(m) => judge(&m, "module tcp_bbr"),
        Err(e) => Check::missing(NAME, format!("{e}: cannot read native bbr's BTF")),
    }
}

fn bpffs(inputs: &Inputs) -> Check {
    let root = inputs.bpffs_root.display();
    if inputs.bpffs_root.starts_with(MOUNTPOINT) && !inputs.mountpoint_mounted {
        return if Cap::SysAdmin.held_in(inputs.caps) {
            Check::ok(
                "bpffs",
                format!("{MOUNTPOINT} not mounted; load mounts it (CAP_SYS_ADMIN held)"),
            )
        } else {
            Check::missing(
                "bpffs",
                format!("no bpffs at {MOUNTPOINT}, and mounting it needs CAP_SYS_ADMIN: mount -t bpf bpf {MOUNTPOINT} as root"),
            )
        };
    }
    if inputs.root_on_bpffs {
        Check::ok("bpffs", format!("{root} on bpffs"))
    } else {
        Check::missing(
            "bpffs",
            format!("{root} is not on a bpf filesystem: mount one there (mount -t bpf bpf DIR) or use a --bpffs under {MOUNTPOINT}"),
        )
    }
}

/// Is `name` an executable file in one of `path`'s directories?
fn in_path(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).map(|d| d.join(name)).find(|p| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

fn tool(path: &std::ffi::OsStr, name: &str, why: &str) -> Check {
    let check = format!("tool {name}");
    match in_path(path, name) {
        Some(p) => Check::ok(check, p.display().to_string()),
        None => {
            let package = match name {
                "ss" | "tc" | "ip" => "iproute2 (Fedora: iproute)",
                other => other,
            };
            Check::missing(
                check,
                format!("{name} not in PATH ({why}): install {package}, or run `cargo xtask deps`"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::btf::fake::Builder;
    use super::*;

    const ALL_CAPS: u64 = 1 << 12 | 1 << 21 | 1 << 38 | 1 << 39;

    /// A BTF with what rttfair probes for, `cong_control` taking `args`.
    fn kernel_btf(args: u32, struct_ops_link: bool) -> Vec<u8> {
        let mut b = Builder::new();
        let int = b.int("int");
        let cc = b.proto(args, int);
        let cc_ptr = b.ptr(cc);
        b.strukt("tcp_congestion_ops", &[("cong_control", cc_ptr)]);
        b.strukt("bpf_iter__tcp", &[]);
        let mut links = vec!["BPF_LINK_TYPE_UNSPEC"];
        if struct_ops_link {
            links.push("BPF_LINK_TYPE_STRUCT_OPS");
        }
        b.enumeration("bpf_link_type", &links);
        let p0 = b.proto(0, int);
        b.func("bpf_ktime_get_tai_ns", p0);
        b.func("bpf_loop", p0);
        let p1 = b.proto(1, int);
        let main = b.proto(args, int);
        for f in BBR_KFUNCS {
            b.func(f, if *f == "bbr_main" { main } else { p1 });
        }
        b.bytes()
    }

    struct Host {
        _dir: tempfile::TempDir,
        inputs: Inputs,
    }

    /// A host with every tool, every capability and a BTF file.
    fn host(release: &str, btf: &[u8]) -> Host {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for (t, _) in LAB_TOOLS {
            let p = bin.join(t);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let btf_path = dir.path().join("vmlinux");
        std::fs::write(&btf_path, btf).unwrap();
        let inputs = Inputs {
            kernel_release: release.into(),
            btf: btf_path,
            module_btf_dir: dir.path().join("modules"),
            caps: ALL_CAPS,
            path: bin.into_os_string(),
            bpffs_root: "/sys/fs/bpf/rttfair".into(),
            root_on_bpffs: true,
            mountpoint_mounted: true,
        };
        Host { _dir: dir, inputs }
    }

    fn line(checks: &[Check], name: &str) -> String {
        checks
            .iter()
            .find(|c| c.check == name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
            .line()
    }

    #[test]
    fn a_host_with_everything_passes_every_check() {
        let h = host("6.18.44-fc", &kernel_btf(4, true));
        let checks = run(&h.inputs, Scope::All);
        assert!(checks.iter().all(|c| c.ok), "{checks:#?}");
        assert_eq!(
            line(&checks, "kernel"),
            "kernel: ok (Linux 6.18.44-fc, floor 6.10)"
        );
        assert_eq!(checks.len(), 9 + LAB_TOOLS.len());
        assert_eq!(first_missing(&checks), None);
    }

    #[test]
    fn a_kernel_before_6_10_is_refused_with_how_to_fix() {
        let h = host("6.6.30-lts", &kernel_btf(3, true));
        let checks = run(&h.inputs, Scope::Load { bbr_native: false });
        assert_eq!(
            line(&checks, "kernel"),
            "kernel: missing: Linux 6.6.30-lts is older than 6.10, the first with the 4-argument \
             cong_control every rttfair CCA implements: upgrade to Linux 6.10 or later"
        );
        assert_eq!(
            line(&checks, "struct_ops"),
            "struct_ops: missing: tcp_congestion_ops.cong_control takes 3 arguments here; \
             rttfair's CCAs need the 4-argument one of Linux 6.10: upgrade the kernel"
        );
        assert_eq!(first_missing(&checks), Some(line(&checks, "kernel")));
    }

    /// The BTF probe wins over the number: a distribution kernel that
    /// carries the features below 6.10 passes.
    #[test]
    fn a_backported_kernel_passes_on_its_btf() {
        let h = host("5.14.0-427.el9", &kernel_btf(4, true));
        let checks = run(&h.inputs, Scope::Load { bbr_native: true });
        assert!(checks.iter().all(|c| c.ok), "{checks:#?}");
        assert!(line(&checks, "kernel").contains("backported"));
    }

    #[test]
    fn no_struct_ops_link_is_its_own_line() {
        let h = host("6.10.0", &kernel_btf(4, false));
        let checks = run(&h.inputs, Scope::All);
        assert_eq!(
            first_missing(&checks).unwrap(),
            "struct_ops link: missing: no BPF_LINK_TYPE_STRUCT_OPS (.struct_ops.link, swap): needs Linux 6.4 or later"
        );
    }

    #[test]
    fn a_path_without_iperf3_fails_the_lab_but_not_load() {
        let mut h = host("6.18.0", &kernel_btf(4, true));
        let bin = PathBuf::from(&h.inputs.path);
        std::fs::remove_file(bin.join("iperf3")).unwrap();
        let lab = run(&h.inputs, Scope::Lab);
        assert_eq!(
            first_missing(&lab).unwrap(),
            "tool iperf3: missing: iperf3 not in PATH (the lab's traffic): install iperf3, or run `cargo xtask deps`"
        );
        let load = run(&h.inputs, Scope::Load { bbr_native: true });
        assert_eq!(first_missing(&load), None);
        assert!(!load.iter().any(|c| c.check.starts_with("tool ")));
        h.inputs.path = OsString::new();
        assert!(line(&run(&h.inputs, Scope::Lab), "tool ip").contains("install iproute2"));
    }

    #[test]
    fn missing_btf_says_no_btf_and_the_probes_say_why_they_cannot_run() {
        let mut h = host("6.18.0", &kernel_btf(4, true));
        h.inputs.btf = "/nonexistent/btf".into();
        let checks = run(&h.inputs, Scope::Load { bbr_native: false });
        assert_eq!(
            first_missing(&checks).unwrap(),
            "btf: missing: no BTF at /nonexistent/btf: rttfair needs a kernel built with CONFIG_DEBUG_INFO_BTF=y"
        );
        assert!(line(&checks, "struct_ops").contains("cannot probe without"));
    }

    #[test]
    fn capabilities_are_what_the_use_needs() {
        let mut h = host("6.18.0", &kernel_btf(4, true));
        h.inputs.caps = 1 << 39; // CAP_BPF only
        let load = run(&h.inputs, Scope::Load { bbr_native: false });
        assert_eq!(
            first_missing(&load).unwrap(),
            "capabilities: missing: CAP_PERFMON (run as root, or grant them, e.g. systemd AmbientCapabilities=)"
        );
        h.inputs.caps = 1 << 21; // CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON
        assert_eq!(first_missing(&run(&h.inputs, Scope::Daemon)), None);
        assert!(line(&run(&h.inputs, Scope::Lab), "capabilities").ends_with(
            "missing: CAP_NET_ADMIN (run as root, or grant them, e.g. systemd AmbientCapabilities=)"
        ));
    }

    #[test]
    fn bpffs_mountable_only_with_sys_admin() {
        let mut h = host("6.18.0", &kernel_btf(4, true));
        h.inputs.mountpoint_mounted = false;
        h.inputs.root_on_bpffs = false;
        assert!(line(&run(&h.inputs, Scope::Daemon), "bpffs")
            .contains(": ok (/sys/fs/bpf not mounted; load mounts it"));
        h.inputs.caps = 1 << 39 | 1 << 38;
        assert_eq!(
            line(&run(&h.inputs, Scope::Daemon), "bpffs"),
            "bpffs: missing: no bpffs at /sys/fs/bpf, and mounting it needs CAP_SYS_ADMIN: mount -t bpf bpf /sys/fs/bpf as root"
        );
        h.inputs.bpffs_root = "/tmp/x/root".into();
        assert!(line(&run(&h.inputs, Scope::Daemon), "bpffs")
            .contains("/tmp/x/root is not on a bpf filesystem"));
    }

    /// bbr as a module: its functions are in /sys/kernel/btf/tcp_bbr, or
    /// nowhere until it is loaded; only bbr_native (and plain doctor) care.
    #[test]
    fn native_bbr_as_an_unloaded_module() {
        let mut b = Builder::new();
        let int = b.int("int");
        let cc = b.proto(4, int);
        let cc_ptr = b.ptr(cc);
        b.strukt("tcp_congestion_ops", &[("cong_control", cc_ptr)]);
        b.enumeration("bpf_link_type", &["BPF_LINK_TYPE_STRUCT_OPS"]);
        let p0 = b.proto(0, int);
        b.func("bpf_ktime_get_tai_ns", p0);
        b.func("bpf_loop", p0);
        let h = host("6.12.0", &b.bytes());
        let native = run(&h.inputs, Scope::Load { bbr_native: true });
        assert!(first_missing(&native).unwrap().starts_with(
            "bbr kfuncs: missing: native bbr is not in the kernel's BTF: load its module (modprobe tcp_bbr)"
        ));
        assert_eq!(
            first_missing(&run(&h.inputs, Scope::Load { bbr_native: false })),
            None
        );
    }

    #[test]
    fn releases_parse_to_major_minor() {
        assert_eq!(parse_release("6.18.44-fc-v1294"), Some((6, 18)));
        assert_eq!(parse_release("6.10"), Some((6, 10)));
        assert_eq!(parse_release("5.14.0-427.el9.x86_64"), Some((5, 14)));
        assert_eq!(parse_release("garbage"), None);
    }

    /// On this machine (a 6.18 kernel, root) everything is there.
    #[test]
    fn this_host_passes_where_it_has_btf() {
        let inputs = Inputs::from_host(Path::new("/sys/fs/bpf/rttfair"));
        if !inputs.btf.exists() || inputs.caps == 0 {
            return;
        }
        let checks = run(&inputs, Scope::Load { bbr_native: true });
        for c in &checks {
            if c.check != "bpffs" && c.check != "capabilities" {
                assert!(c.ok, "{}", c.line());
            }
        }
    }
}
