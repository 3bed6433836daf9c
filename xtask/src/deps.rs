//! The system packages the project needs, named per distribution, and
//! installing them (apt only; elsewhere one line says what to install).

use std::process::Command;

use anyhow::{bail, Context, Result};

/// What a task needs installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Set {
    /// Building: the BPF toolchain and libbpf's libraries.
    Build,
    /// The demo (and the lab, the benches): build + the lab's tools.
    Demo,
    /// The whole test suite, the image and the package.
    All,
}

/// One package: its name on Debian (and Ubuntu, but for bpftool) and Fedora, the smallest set
/// that needs it, the command that shows it is there (for `--no-install`)
/// and why it is needed.
struct Package {
    debian: &'static str,
    fedora: &'static str,
    set: Set,
    probe: Probe,
    why: &'static str,
}

/// How `--no-install` sees a package is there.
#[derive(Clone, Copy)]
enum Probe {
    /// An executable in PATH.
    Tool(&'static str),
    /// A library pkg-config knows.
    PkgConfig(&'static str),
    /// Nothing to check cheaply (data files, test-only tools).
    None,
}

const PACKAGES: &[Package] = &[
    Package {
        debian: "clang",
        fedora: "clang",
        set: Set::Build,
        probe: Probe::Tool("clang"),
        why: "compiles the BPF programs",
    },
    Package {
        debian: "llvm",
        fedora: "llvm",
        set: Set::Build,
        probe: Probe::Tool("llvm-strip"),
        why: "llvm-strip for BPF objects",
    },
    Package {
        debian: "libelf-dev",
        fedora: "elfutils-libelf-devel",
        set: Set::Build,
        probe: Probe::PkgConfig("libelf"),
        why: "libbpf (vendored) links libelf",
    },
    Package {
        debian: "zlib1g-dev",
        fedora: "zlib-devel",
        set: Set::Build,
        probe: Probe::PkgConfig("zlib"),
        why: "libbpf (vendored) links zlib",
    },
    Package {
        debian: "pkg-config",
        fedora: "pkgconf",
        set: Set::Build,
        probe: Probe::Tool("pkg-config"),
        why: "locating libelf/zlib",
    },
    // Ubuntu before 24.04 ships bpftool in linux-tools (see `ubuntu_bpftool`).
    Package {
        debian: "bpftool",
        fedora: "bpftool",
        set: Set::Build,
        probe: Probe::Tool("bpftool"),
        why: "generates vmlinux.h from kernel BTF",
    },
    Package {
        debian: "iproute2",
        fedora: "iproute",
        set: Set::Demo,
        probe: Probe::Tool("ip"),
        why: "namespaces, veth, tc, ss",
    },
    Package {
        debian: "ethtool",
        fedora: "ethtool",
        set: Set::Demo,
        probe: Probe::Tool("ethtool"),
        why: "turns off TSO/GSO/GRO on emulated links",
    },
    Package {
        debian: "iperf3",
        fedora: "iperf3",
        set: Set::Demo,
        probe: Probe::Tool("iperf3"),
        why: "lab traffic",
    },
    Package {
        debian: "fonts-dejavu-core",
        fedora: "dejavu-sans-fonts",
        set: Set::Demo,
        probe: Probe::None,
        why: "text in the lab's plots",
    },
    Package {
        debian: "prometheus",
        fedora: "golang-github-prometheus",
        set: Set::All,
        probe: Probe::Tool("promtool"),
        why: "daemon integration test (promtool, a real scraper)",
    },
    Package {
        debian: "python3-venv",
        fedora: "python3",
        set: Set::All,
        probe: Probe::Tool("python3"),
        why: "a venv for kubernetes-validate (manifest tests)",
    },
    Package {
        debian: "podman",
        fedora: "podman",
        set: Set::All,
        probe: Probe::Tool("podman"),
        why: "builds and runs the container image (daemonless)",
    },
    Package {
        debian: "runc",
        fedora: "runc",
        set: Set::All,
        probe: Probe::Tool("runc"),
        why: "OCI runtime that also works on hybrid-cgroup hosts (crun does not)",
    },
    Package {
        debian: "binutils",
        fedora: "binutils",
        set: Set::All,
        probe: Probe::Tool("objcopy"),
        why: "objcopy strips the image's binary",
    },
    Package {
        debian: "systemd",
        fedora: "systemd",
        set: Set::All,
        probe: Probe::Tool("systemd-analyze"),
        why: "systemd-analyze security --offline scores the unit (deploy test)",
    },
];

/// A distribution whose package names we know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Distro {
    Debian,
    /// With its VERSION_ID, e.g. "22.04".
    Ubuntu(String),
    Fedora,
}

impl Distro {
    /// `--distro NAME` (the version of Ubuntu from this host, else 24.04).
    pub fn parse(name: &str) -> Result<Distro> {
        match name {
            "debian" => Ok(Distro::Debian),
            "ubuntu" => Ok(Distro::Ubuntu(match detect_from(&read_os_release()) {
                Some(Distro::Ubuntu(v)) => v,
                _ => "24.04".into(),
            })),
            "fedora" => Ok(Distro::Fedora),
            other => bail!("unknown distro '{other}' (debian, ubuntu, fedora)"),
        }
    }

    fn installer(&self) -> &'static str {
        match self {
            Distro::Debian | Distro::Ubuntu(_) => "apt-get install -y --no-install-recommends",
            Distro::Fedora => "dnf install -y",
        }
    }
}

fn read_os_release() -> String {
    std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default()
}

/// The distribution /etc/os-release describes (ID, else ID_LIKE).
pub fn detect_from(os_release: &str) -> Option<Distro> {
    let field = |k: &str| {
        os_release.lines().find_map(|l| {
            l.strip_prefix(k)
                .and_then(|v| v.strip_prefix('='))
                .map(|v| v.trim().trim_matches('"').to_string())
        })
    };
    let version = field("VERSION_ID").unwrap_or_default();
    let id = field("ID").unwrap_or_default();
    let like = field("ID_LIKE").unwrap_or_default();
    let known = |name: &str| match name {
        "debian" => Some(Distro::Debian),
        "ubuntu" => Some(Distro::Ubuntu(version.clone())),
        "fedora" | "rhel" | "centos" => Some(Distro::Fedora),
        _ => None,
    };
    known(&id).or_else(|| like.split_whitespace().find_map(known))
}

/// This host's distribution.
pub fn detect() -> Result<Distro> {
    detect_from(&read_os_release()).context(
        "cannot tell the distribution from /etc/os-release: pass --distro debian|ubuntu|fedora",
    )
}

/// Ubuntu before 24.04 has no `bpftool` package: it is in linux-tools,
/// one per kernel.
fn ubuntu_bpftool(version: &str, kernel: &str) -> Vec<String> {
    let parse = |v: &str| -> (u32, u32) {
        let mut it = v.split('.').map(|p| p.parse().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    };
    if parse(version) >= (24, 4) {
        vec!["bpftool".into()]
    } else {
        vec!["linux-tools-common".into(), format!("linux-tools-{kernel}")]
    }
}

/// The package names `set` needs on `distro` (`kernel`: `uname -r`).
pub fn packages(distro: &Distro, set: Set, kernel: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in PACKAGES.iter().filter(|p| p.set <= set) {
        match distro {
            Distro::Debian => out.push(p.debian.to_string()),
            Distro::Ubuntu(v) if p.debian == "bpftool" => out.extend(ubuntu_bpftool(v, kernel)),
            Distro::Ubuntu(_) => out.push(p.debian.to_string()),
            Distro::Fedora => out.push(p.fedora.to_string()),
        }
    }
    out
}

/// The line `deps --print` prints: the install command for `set`.
pub fn print_line(distro: &Distro, set: Set, kernel: &str) -> String {
    format!(
        "{} {}",
        distro.installer(),
        packages(distro, set, kernel).join(" ")
    )
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()))
}

/// What of `set` is visibly missing (tools not in PATH, libraries
/// pkg-config does not know): `--no-install` needs this to be empty.
pub fn missing_tools(set: Set) -> Vec<String> {
    PACKAGES
        .iter()
        .filter(|p| p.set <= set)
        .filter(|p| match p.probe {
            Probe::Tool(t) => !in_path(t),
            Probe::PkgConfig(lib) => !Command::new("pkg-config")
                .args(["--exists", lib])
                .status()
                .is_ok_and(|s| s.success()),
            Probe::None => false,
        })
        .map(|p| match p.probe {
            Probe::Tool(t) => format!("{t} ({})", p.why),
            Probe::PkgConfig(lib) => format!("{lib} for pkg-config ({})", p.why),
            Probe::None => p.debian.to_string(),
        })
        .collect()
}

/// `uname -r`.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "$(uname -r)".into())
}

/// Debian packages of `names` that dpkg does not list as installed.
pub fn not_installed(names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_names_the_distro() {
        let debian =
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n";
        assert_eq!(detect_from(debian), Some(Distro::Debian));
        let ubuntu = "NAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nID=ubuntu\nID_LIKE=debian\n";
        assert_eq!(detect_from(ubuntu), Some(Distro::Ubuntu("22.04".into())));
        let rocky = "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\n";
        assert_eq!(detect_from(rocky), Some(Distro::Fedora));
        let mint = "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"21.3\"\n";
        assert_eq!(detect_from(mint), Some(Distro::Ubuntu("21.3".into())));
        assert_eq!(detect_from("ID=arch\n"), None);
    }

    #[test]
    fn package_names_per_distro() {
        assert_eq!(
            print_line(&Distro::Fedora, Set::Demo, "6.9.0"),
            "dnf install -y clang llvm elfutils-libelf-devel zlib-devel pkgconf bpftool iproute ethtool iperf3 dejavu-sans-fonts"
        );
        assert_eq!(
            packages(
                &Distro::Ubuntu("22.04".into()),
                Set::Build,
                "5.15.0-91-generic"
            ),
            [
                "clang",
                "llvm",
                "libelf-dev",
                "zlib1g-dev",
                "pkg-config",
                "linux-tools-common",
                "linux-tools-5.15.0-91-generic"
            ]
        );
        assert!(packages(&Distro::Ubuntu("24.04".into()), Set::Build, "x")
            .contains(&"bpftool".to_string()));
    }

    /// The demo installs what it runs and nothing of the test suite's.
    #[test]
    fn the_demo_set_is_build_and_lab_only() {
        let demo = packages(&Distro::Debian, Set::Demo, "x");
        for p in [
            "clang",
            "bpftool",
            "iperf3",
            "iproute2",
            "ethtool",
            "fonts-dejavu-core",
        ] {
            assert!(demo.contains(&p.to_string()), "{p} missing from {demo:?}");
        }
        for p in ["podman", "prometheus", "python3-venv", "systemd", "runc"] {
            assert!(!demo.contains(&p.to_string()), "{p} in the demo's {demo:?}");
        }
        let all = packages(&Distro::Debian, Set::All, "x");
        assert_eq!(all.len(), PACKAGES.len());
        assert!(all.contains(&"podman".to_string()));
    }
}
