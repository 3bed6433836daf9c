//! Compiles the BPF programs in `../bpf` and generates the libbpf-cargo
//! skeletons the crate uses.
//!
//! Every object is embedded (`src/objects.rs`, `src/sockets.rs`); the CCAs
//! are opened through libbpf-rs' generic `ObjectBuilder`, so one lifecycle
//! serves every CCA and needs no skeleton. Skeletons are generated only where
//! code uses them (`SKELETONS`): `abi` for the Rust mirror of the map
//! layouts in `bpf/include/rttfair_abi.h` (libbpf-cargo derives those types
//! from BTF, so the layout is typed once, in C; see `src/abi.rs`), and the
//! migrate iterator and cgroup program, which are driven through theirs.
//!
//! `vmlinux.h` is generated here from the build host's kernel BTF
//! (`bpftool btf dump file /sys/kernel/btf/vmlinux format c`) unless
//! `RTTFAIR_VMLINUX_H` names a file to use instead. The programs are CO-RE, so
//! the result runs on any kernel with the fields they read.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

/// The BPF programs this crate embeds, by source stem.
const OBJECTS: &[&str] = &[
    "abi",
    "bbr1",
    "fairtt",
    "adbbr",
    "qfair",
    "bbr_native",
    "bbr3",
    "migrate",
    "sockets",
    "cgroup_cca",
    "lab_loss",
    "lab_arrivals",
    "lab_aqm",
    "testdata/reject",
    "testdata/abi_layout",
];

/// The objects whose generated skeleton some module includes (`skeleton!`).
const SKELETONS: &[&str] = &["abi", "migrate", "cgroup_cca"];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let bpf_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpf");
    let include = bpf_dir.join("include");

    let vmlinux_dir = out.join("vmlinux");
    fs::create_dir_all(&vmlinux_dir).expect("create vmlinux dir");
    write_vmlinux_h(&vmlinux_dir.join("vmlinux.h"));

    export_abi_version(&include.join("rttfair_abi.h"));
    println!("cargo:rerun-if-env-changed=RTTFAIR_VMLINUX_H");
    println!("cargo:rerun-if-changed={}", include.display());
    compile_host_math(&bpf_dir, &include);
    for stem in OBJECTS {
        let src = bpf_dir.join(format!("{stem}.bpf.c"));
        println!("cargo:rerun-if-changed={}", src.display());
        let mut builder = SkeletonBuilder::new();
        builder
            .source(&src)
            .obj(out.join(format!("{}.bpf.o", stem.replace('/', "_"))))
            .clang_args([
                "-Wall".into(),
                "-mcpu=v3".into(), // atomics with fetch (flow ids, registry counts)
                "-Werror".into(),
                "-Wno-unused-function".into(),
                "-I".into(),
                include.clone().into_os_string(),
                "-I".into(),
                vmlinux_dir.clone().into_os_string(),
            ]);
        let built = if SKELETONS.contains(stem) {
            builder.build_and_generate(out.join(format!("{stem}.skel.rs")))
        } else {
            builder.build()
        };
        built.unwrap_or_else(|e| panic!("building bpf/{stem}.bpf.c failed: {e:#}"));
    }
}

fn write_vmlinux_h(dst: &Path) {
    if let Some(given) = env::var_os("RTTFAIR_VMLINUX_H") {
        fs::copy(&given, dst).unwrap_or_else(|e| panic!("copy RTTFAIR_VMLINUX_H: {e}"));
        return;
    }
    let btf = "/sys/kernel/btf/vmlinux";
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", btf, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("running bpftool to generate vmlinux.h failed ({e}); install bpftool (cargo xtask deps) or set RTTFAIR_VMLINUX_H")
        });
    if !output.status.success() {
        panic!(
            "bpftool could not dump {btf} (kernel without BTF?): {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // Rewrite only when it changed, so rebuilds stay incremental.
    if fs::read(dst).ok().as_deref() != Some(&output.stdout[..]) {
        fs::write(dst, &output.stdout).expect("write vmlinux.h");
    }
}

/// Hand RTTFAIR_ABI_VERSION from the C header to the Rust code, so the version
/// is written once.
fn export_abi_version(header: &Path) {
    let text = fs::read_to_string(header).expect("read rttfair_abi.h");
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("#define RTTFAIR_ABI_VERSION "))
        .map(str::trim)
        .expect("RTTFAIR_ABI_VERSION in rttfair_abi.h");
    println!("cargo:rustc-env=RTTFAIR_ABI_VERSION={version}");
}

/// The fixed-point math headers compiled for the host, for the unit tests in
/// src/math.rs (the same source the BPF programs include). Linked into every
/// build of the crate, but only the tests reference it.
fn compile_host_math(bpf_dir: &Path, include: &Path) {
    let src = bpf_dir.join("host/math_host.c");
    println!("cargo:rerun-if-changed={}", src.display());
    cc::Build::new()
        .file(&src)
        .include(include)
        .warnings(true)
        .compile("rttfair_math_host");
}
