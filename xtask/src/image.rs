//! `cargo xtask image`: a minimal container image, built offline.
//!
//! FROM scratch (no base image is pulled): `rttfairctl` (debug info
//! stripped), the tools the lab runs ([`LAB_TOOLS`]), the
//! shared libraries `ldd` says they link and the dynamic loader, copied from
//! this host at their own paths, the font the lab's plots draw text with
//! (see [`copy_font`]), and the default daemon config. Built with
//! podman (Debian package, daemonless; `docker build` would need a running
//! daemon) with `--pull=never --network=none`, tagged
//! `localhost/rttfair:VERSION` (what podman names a bare `rttfair:VERSION`,
//! and the name the manifests use), and saved as an OCI archive
//! (`target/image/rttfair-VERSION.oci.tar`) that a cluster's nodes can
//! import under that name or a registry can take (docs/kubernetes.md).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The image's version tag: the workspace version, like `rttfairctl --version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Programs the lab executes (lab/src: netns, link, iperf, topology,
/// churn; `ss` for the receivers' byte counts in rcvbytes, `sh` for the
/// delay element's RPS mask in topology, `dmesg` for the kernel warnings a
/// run records in procfs). A unit test keeps this in step with lab/src.
const LAB_TOOLS: &[&str] = &[
    "ip", "tc", "ethtool", "sysctl", "iperf3", "ss", "sh", "dmesg",
];

/// The image's default name: podman names a bare `rttfair:VERSION`
/// `localhost/rttfair:VERSION`, and a node importing the archive keeps
/// that name, so the manifests say it in full.
pub fn default_tag() -> String {
    format!("localhost/rttfair:{VERSION}")
}

/// The paths the lab's plots load their font from (lab/src/results/plot.rs
/// includes the same file).
const FONT_PATHS: &[&str] = include!("../../lab/src/results/font_paths.in");

/// What `image` was asked for.
pub struct ImageArgs {
    /// A built rttfairctl; `None`: build the release one.
    pub binary: Option<PathBuf>,
    /// Image name and tag; default [`default_tag`].
    pub tag: String,
}

impl ImageArgs {
    pub fn parse(rest: &[String]) -> Result<ImageArgs> {
        let mut args = ImageArgs {
            binary: None,
            tag: default_tag(),
        };
        let mut it = rest.iter();
        while let Some(a) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{flag} needs a value"))
            };
            match a.as_str() {
                "--binary" => args.binary = Some(PathBuf::from(value("--binary")?)),
                "--tag" => args.tag = value("--tag")?,
                other => bail!("image: unknown argument '{other}' (--binary PATH, --tag NAME:TAG)"),
            }
        }
        if let Some(b) = &args.binary {
            if !b.is_file() {
                bail!("image: --binary {} is not a file", b.display());
            }
        }
        if args.tag.is_empty() || args.tag.contains(char::is_whitespace) {
            bail!("image: --tag '{}' is not an image name", args.tag);
        }
        Ok(args)
    }
}

/// Stage the root filesystem under `dir/rootfs`, build, save. Returns the
/// OCI archive's path.
pub fn build(root: &Path, dir: &Path, binary: &Path, tag: &str) -> Result<PathBuf> {
    let rootfs = dir.join("rootfs");
    if rootfs.exists() {
        fs::remove_dir_all(&rootfs).with_context(|| format!("clean {}", rootfs.display()))?;
    }
    fs::create_dir_all(&rootfs)?;

    let ctl = rootfs.join("usr/local/bin/rttfairctl");
    fs::create_dir_all(ctl.parent().unwrap())?;
    run(Command::new("objcopy")
        .arg("--strip-debug")
        .arg(binary)
        .arg(&ctl))?;
    let mut executables = vec![binary.to_path_buf()];
    for tool in LAB_TOOLS {
        let path = which(tool)?;
        copy_at_own_path(&path, &rootfs)?;
        executables.push(path);
    }
    let mut libs = BTreeSet::new();
    for exe in &executables {
        libs.extend(shared_libraries(exe)?);
    }
    for lib in &libs {
        copy_at_own_path(lib, &rootfs)?;
    }
    copy_font(FONT_PATHS, &rootfs)?;
    for d in [
        "tmp",
        "run/netns",
        "etc/rttfair",
        "sys/fs/bpf",
        "proc",
        "dev",
    ] {
        fs::create_dir_all(rootfs.join(d))?;
    }
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(rootfs.join("tmp"), fs::Permissions::from_mode(0o1777))?;
    fs::copy(
        root.join("deploy/systemd/daemon.toml"),
        rootfs.join("etc/rttfair/daemon.toml"),
    )?;
    fs::write(
        rootfs.join("etc/passwd"),
        "root:x:0:0:root:/:/nonexistent\n",
    )?;
    fs::write(rootfs.join("etc/group"), "root:x:0:\n")?;

    let containerfile = dir.join("Containerfile");
    fs::write(
        &containerfile,
        format!(
            "FROM scratch\n\
             COPY rootfs/ /\n\
             ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
             LABEL org.opencontainers.image.title=rttfair \
             org.opencontainers.image.version={VERSION} \
             org.opencontainers.image.licenses=GPL-2.0-only\n\
             ENTRYPOINT [\"/usr/local/bin/rttfairctl\"]\n\
             CMD [\"--help\"]\n"
        ),
    )?;
    run(Command::new("podman")
        .args([
            "build",
            "--pull=never",
            "--network=none",
            "--quiet",
            "-t",
            tag,
            "-f",
        ])
        .arg(&containerfile)
        .arg(dir))?;
    // The archive is named after the image, not its registry:
    // localhost/rttfair:0.1.0 -> rttfair-0.1.0.oci.tar.
    let name = tag.rsplit('/').next().unwrap_or(tag).replace(':', "-");
    let archive = dir.join(format!("{name}.oci.tar"));
    let _ = fs::remove_file(&archive);
    run(Command::new("podman")
        .args(["save", "--quiet", "--format", "oci-archive", "-o"])
        .arg(&archive)
        .arg(tag))?;
    Ok(archive)
}

/// `tool`'s path on PATH (and the sbin directories, which root's PATH has
/// but a developer's may not).
fn which(tool: &str) -> Result<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file());
    found.with_context(|| format!("{tool} not found (cargo xtask deps installs it)"))
}

/// Absolute paths of the shared objects `exe` loads, the loader included,
/// from `ldd`: "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and
/// "/lib64/ld-linux-x86-64.so.2 (0x...)".
fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(exe).output().context("run ldd")?;
    if !out.status.success() {
        bail!("ldd {} failed", exe.display());
    }
    let mut libs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let target = match line.split_once("=>") {
            Some((_, rhs)) => rhs.trim(),
            None => line.trim(),
        };
        let path = target.split_whitespace().next().unwrap_or("");
        if line.contains("not found") {
            bail!("{}: {}", exe.display(), line.trim());
        }
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// Copy `path` (its contents, following symlinks) to the same path under
/// `rootfs`.
/// Copy the first of `paths` found on this host into `rootfs` at its own
/// path, where the lab looks for it: without it every plot made in the
/// cluster has no axes, titles or labels, silently. Copied rather than
/// embedded in rttfairctl so the binary does not grow by the font's
/// 750 kB for the hosts that have it, and the lab keeps one way to find
/// it. Its Debian copyright file goes along when present (the font's
/// licence asks that it travel with copies).
fn copy_font(paths: &[&str], rootfs: &Path) -> Result<()> {
    let Some(font) = paths.iter().map(Path::new).find(|p| p.is_file()) else {
        bail!(
            "image: no font for the plots on this host ({}); install fonts-dejavu-core",
            paths.join(", ")
        );
    };
    copy_at_own_path(font, rootfs)?;
    let copyright = Path::new("/usr/share/doc/fonts-dejavu-core/copyright");
    if copyright.is_file() {
        copy_at_own_path(copyright, rootfs)?;
    }
    Ok(())
}

fn copy_at_own_path(path: &Path, rootfs: &Path) -> Result<()> {
    let dest = rootfs.join(path.strip_prefix("/").unwrap_or(path));
    fs::create_dir_all(dest.parent().unwrap())?;
    fs::copy(path, &dest).with_context(|| format!("copy {}", path.display()))?;
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("spawn {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{cmd:?} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the temp dir for one test.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-image-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    /// Every program lab/src runs by a literal name (`exec("tc", ..)`,
    /// `.command("ss")`, `Command::new("dmesg")`) is in [`LAB_TOOLS`]: the
    /// image lacked `ss` once and a lab run in the container failed. The
    /// benches under lab/src/bin run on a developer host, not in the image.
    #[test]
    fn the_image_has_every_tool_the_lab_runs() {
        fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "bin") {
                        sources(&p, out);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/src"),
            &mut files,
        );
        let mut run = BTreeSet::new();
        for f in &files {
            let text = fs::read_to_string(f).unwrap();
            for call in ["exec(", "command(", "Command::new("] {
                for (i, _) in text.match_indices(call) {
                    let rest = text[i + call.len()..].trim_start();
                    let Some(lit) = rest.strip_prefix('"') else {
                        continue;
                    };
                    let name = &lit[..lit.find('"').unwrap()];
                    if !name.is_empty() && !name.contains(' ') {
                        run.insert(name.to_string());
                    }
                }
            }
        }
        assert!(run.contains("ss") && run.contains("tc"), "{run:?}");
        let missing: Vec<&String> = run
            .iter()
            .filter(|t| !LAB_TOOLS.contains(&t.as_str()))
            .collect();
        assert!(missing.is_empty(), "lab runs {missing:?}, not in LAB_TOOLS");
    }

    /// The image gets the font at the path the lab loads it from; a host
    /// without any of the paths fails the build in one line.
    #[test]
    fn the_plots_font_is_copied_or_the_build_refuses() {
        let rootfs = scratch("font");
        let found = FONT_PATHS
            .iter()
            .find(|p| Path::new(p).is_file())
            .expect("this host has the plots' font (cargo xtask deps installs it)");
        copy_font(FONT_PATHS, &rootfs).unwrap();
        let copied = rootfs.join(found.trim_start_matches('/'));
        assert_eq!(fs::read(&copied).unwrap(), fs::read(found).unwrap());

        let none = scratch("nofont");
        let missing = ["/nonexistent/rttfair/DejaVuSans.ttf"];
        let e = format!("{:#}", copy_font(&missing, &none).unwrap_err());
        assert!(e.starts_with("image: no font for the plots"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(fs::read_dir(&none).unwrap().count(), 0);
        for d in [rootfs, none] {
            fs::remove_dir_all(d).unwrap();
        }
    }
}
