//! The ABI version rule, enforced: a layout change without a version bump
//! fails the build's tests.
//!
//! `bpf/include/rttfair_abi.h` promises that a change to any of its structs
//! (or enums) bumps `RTTFAIR_ABI_VERSION`, which names every pinned map, so
//! a new build never reuses a pin of an older layout. Remembering that failed
//! twice (`struct qfair_tunables` grew in v5 without a bump), and a change
//! that keeps a struct's size but moves its fields would pass every size
//! check the loader makes. So the layout of every type the header defines is
//! recorded, with the version it belongs to, in
//! `loader/tests/data/abi-layout.txt`, and the test below compares that with
//! the layout the compiler produced, read from the BTF of `bpf/abi.bpf.c`
//! (which references every ABI type).
//!
//! The types are not listed by hand: they are every named struct, union and
//! enum in that BTF but the anchor itself, and the test checks that this is
//! exactly the set the header defines (a type the anchor forgets is not
//! fingerprinted, one from elsewhere would tie the record to a kernel).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use libbpf_rs::btf::types::{Composite, Enum, Enum64, MemberAttr};
use libbpf_rs::btf::{BtfKind, BtfType, HasSize};
use libbpf_rs::{AsRawLibbpf, Btf};

/// The compiled anchor object: compiled by build.rs, never loaded.
static ABI_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/abi.bpf.o"));
/// The header, for the names of the types it defines.
static HEADER: &str = include_str!("../../../bpf/include/rttfair_abi.h");
/// The struct in `bpf/abi.bpf.c` that only references the ABI types.
const ANCHOR: &str = "rttfair_abi_anchor";
/// Where the layout of the current version is recorded (checked in).
const RECORD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/abi-layout.txt");
/// The record's name in messages.
const RECORD_NAME: &str = "loader/tests/data/abi-layout.txt";
/// How to rewrite the record once the version is bumped.
const BLESS: &str = "RTTFAIR_BLESS=1 cargo test -p rttfair-loader --lib abi::layout";

/// One ABI type as laid out: `struct NAME` (or `union`, `enum`), its size in
/// bytes, and its member lines.
struct TypeLayout {
    head: String,
    size: usize,
    members: Vec<String>,
}

/// Every named struct, union and enum of `btf` but the anchor, sorted by
/// head: per struct/union member its byte offset, size, name and type
/// (bitfields in bits); per enum value its name and value.
fn live_types(btf: &Btf<'_>) -> Vec<TypeLayout> {
    let named = |t: BtfType<'_>| t.name().map(|n| n.to_string_lossy().into_owned());
    let mut types = Vec::new();
    for c in btf.type_by_kind::<Composite<'_>>() {
        match named(*c) {
            Some(name) if name != ANCHOR => {
                let kind = if c.kind() == BtfKind::Union {
                    "union"
                } else {
                    "struct"
                };
                let mut members = Vec::new();
                composite_members(btf, c, 0, &mut members);
                let head = format!("{kind} {name}");
                types.push(TypeLayout {
                    head,
                    size: c.size(),
                    members,
                });
            }
            _ => {}
        }
    }
    for e in btf.type_by_kind::<Enum<'_>>() {
        if let Some(name) = named(*e) {
            let values = (0..e.len()).filter_map(|i| e.get(i));
            let members = enum_members(e.size(), values.map(|v| (v.name, v.value.into())));
            types.push(TypeLayout {
                head: format!("enum {name}"),
                size: e.size(),
                members,
            });
        }
    }
    for e in btf.type_by_kind::<Enum64<'_>>() {
        if let Some(name) = named(*e) {
            let values = (0..e.len()).filter_map(|i| e.get(i));
            let members = enum_members(e.size(), values.map(|v| (v.name, v.value)));
            types.push(TypeLayout {
                head: format!("enum {name}"),
                size: e.size(),
                members,
            });
        }
    }
    types.sort_by(|a, b| a.head.cmp(&b.head));
    types
}

/// The record's layout lines: per type `HEAD SIZE`, then its members indented.
fn layout_lines(types: &[TypeLayout]) -> Vec<String> {
    types
        .iter()
        .flat_map(|t| std::iter::once(format!("{} {}", t.head, t.size)).chain(t.members.clone()))
        .collect()
}

/// The member lines of a struct or union, `base_bits` into the outer type;
/// the members of an anonymous struct or union member are listed in place.
fn composite_members(btf: &Btf<'_>, c: Composite<'_>, base_bits: u32, out: &mut Vec<String>) {
    for m in (0..c.len()).filter_map(|i| c.get(i)) {
        let ty: BtfType<'_> = btf.type_by_id(m.ty).expect("member type in BTF");
        let name = m.name.map(|n| n.to_string_lossy().into_owned());
        let (bits, width) = match m.attr {
            MemberAttr::Normal { offset } => (base_bits + offset, None),
            MemberAttr::BitField { size, offset } => (base_bits + offset, Some(size)),
        };
        match (name, Composite::try_from(ty)) {
            (None, Ok(inner)) => composite_members(btf, inner, bits, out),
            (name, _) => {
                let name = name.as_deref().unwrap_or("<anon>");
                let place = match width {
                    None if bits % 8 == 0 => format!("{} {}", bits / 8, resolved_size(btf, &ty)),
                    None => format!("{bits}b {}", resolved_size(btf, &ty)),
                    Some(w) => format!("{bits}b {w}b"),
                };
                out.push(format!("  {place} {name} {}", type_name(ty)));
            }
        }
    }
}

/// The value lines of an enum of `size` bytes. Each value is written as
/// its bit pattern, unsigned: clang 14 records no signedness in BTF (a -1
/// reads as 4294967295) and newer clangs do, so the record stays the same
/// whichever compiled it.
fn enum_members<'a>(
    size: usize,
    values: impl Iterator<Item = (Option<&'a std::ffi::OsStr>, i128)>,
) -> Vec<String> {
    let mask = if size < 16 {
        (1i128 << (8 * size)) - 1
    } else {
        -1
    };
    values
        .map(|(name, value)| {
            let name = name.map(|n| n.to_string_lossy().into_owned());
            format!(
                "  {} = {}",
                name.as_deref().unwrap_or("<anon>"),
                value & mask
            )
        })
        .collect()
}

/// The type as C would spell it (typedef names kept: `__u32`, not `unsigned int`).
fn type_name(t: BtfType<'_>) -> String {
    let named = |word: &str| match t.name() {
        Some(n) => format!("{word}{}", n.to_string_lossy()),
        None => format!("{word}<anon>"),
    };
    let next = || type_name(t.next_type().expect("referenced type in BTF"));
    match t.kind() {
        BtfKind::Void => "void".into(),
        BtfKind::Int | BtfKind::Float | BtfKind::Typedef => named(""),
        BtfKind::Struct | BtfKind::Fwd => named("struct "),
        BtfKind::Union => named("union "),
        BtfKind::Enum | BtfKind::Enum64 => named("enum "),
        BtfKind::Array => {
            let a = libbpf_rs::btf::types::Array::try_from(t).expect("an array");
            format!("{}[{}]", type_name(a.contained_type()), a.capacity())
        }
        BtfKind::Ptr => format!("{} *", next()),
        BtfKind::Const => format!("const {}", next()),
        BtfKind::Volatile => format!("volatile {}", next()),
        BtfKind::Restrict => format!("restrict {}", next()),
        other => format!("{other:?}"),
    }
}

/// A type's size in bytes, typedefs, modifiers and arrays resolved (libbpf's
/// `btf__resolve_size`).
fn resolved_size(btf: &Btf<'_>, t: &BtfType<'_>) -> i64 {
    // SAFETY: the BTF pointer is valid while `btf` lives, and the id is one
    // of its types.
    unsafe {
        libbpf_rs::libbpf_sys::btf__resolve_size(
            btf.as_libbpf_object().as_ptr(),
            t.type_id().into(),
        )
    }
}

/// The structs, unions and enums `rttfair_abi.h` defines (`struct NAME {` at
/// the start of a line).
fn header_types() -> BTreeSet<String> {
    HEADER
        .lines()
        .filter_map(|l| {
            let rest = ["struct ", "union ", "enum "]
                .iter()
                .find_map(|kw| l.strip_prefix(kw).map(|r| (*kw, r)))?;
            let name = rest.1.strip_suffix(" {")?;
            Some(format!("{}{name}", rest.0))
        })
        .collect()
}

/// The record: comment lines, `version N`, the layout lines.
fn render(version: u32, layout: &[String]) -> String {
    let mut s = String::new();
    s.push_str("# The layout of every type in bpf/include/rttfair_abi.h, read from the BTF of\n");
    s.push_str("# bpf/abi.bpf.c, for the RTTFAIR_ABI_VERSION below (loader/src/abi/layout.rs).\n");
    s.push_str("# Members: byte offset, size in bytes, name, type. Do not edit by hand: after\n");
    let _ = writeln!(s, "# bumping the version, `{BLESS}`.");
    let _ = writeln!(s, "version {version}");
    for l in layout {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// The version and layout lines of a record (`None`: missing or malformed).
fn parse(record: &str) -> Option<(u32, Vec<String>)> {
    let mut lines = record.lines().filter(|l| !l.starts_with('#'));
    let version = lines.next()?.strip_prefix("version ")?.parse().ok()?;
    Some((version, lines.map(str::to_owned).collect()))
}

/// What the record says against what the build has: `Ok(true)` to
/// (re)write the record, `Ok(false)` when it stands, `Err` the one-line
/// verdict otherwise. Under the same version, a type may be added (no older
/// build has a map of it) but none changed or removed; blessing does not
/// change that, only a bump does.
fn verdict(
    recorded: Option<&(u32, Vec<String>)>,
    version: u32,
    layout: &[String],
    bless: bool,
) -> Result<bool, String> {
    match recorded {
        Some((v, l)) if *v == version && l == layout => Ok(false),
        Some((v, l)) if *v == version && !only_added(l, layout) => Err(format!(
            "the ABI layout changed but RTTFAIR_ABI_VERSION is still {version}: bump \
             RTTFAIR_ABI_VERSION in bpf/include/rttfair_abi.h and regenerate {RECORD_NAME} with `{BLESS}`"
        )),
        Some((v, _)) if *v > version => Err(format!(
            "RTTFAIR_ABI_VERSION went down from {v} to {version}: versions only go up"
        )),
        _ if bless => Ok(true),
        Some((v, _)) if *v == version => Err(format!(
            "ABI types were added that {RECORD_NAME} lacks: record them with `{BLESS}` \
             (no bump needed, no older build has them)"
        )),
        Some((v, _)) => Err(format!(
            "RTTFAIR_ABI_VERSION is {version} but {RECORD_NAME} records v{v}: regenerate it with `{BLESS}`"
        )),
        None => Err(format!("{RECORD_NAME} is missing or malformed: regenerate it with `{BLESS}`")),
    }
}

/// The layout lines grouped by type: a head line and its member lines.
fn blocks(lines: &[String]) -> Vec<&[String]> {
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].starts_with(' '))
        .chain([lines.len()])
        .collect();
    starts.windows(2).map(|w| &lines[w[0]..w[1]]).collect()
}

/// Whether every type of `old` is in `new` unchanged.
fn only_added(old: &[String], new: &[String]) -> bool {
    let new = blocks(new);
    blocks(old).iter().all(|b| new.contains(b))
}

/// The lines of `a` that `b` lacks, members prefixed with their type's name,
/// for the diff printed before the verdict.
fn only_in(a: &[String], b: &[String]) -> Vec<String> {
    let tagged = |lines: &[String]| -> Vec<String> {
        let mut out = Vec::new();
        for t in blocks(lines) {
            let name = t[0].rsplit_once(' ').map_or(t[0].as_str(), |h| h.0);
            out.push(t[0].clone());
            out.extend(t[1..].iter().map(|m| format!("{name}:{m}")));
        }
        out
    };
    let b: BTreeSet<String> = tagged(b).into_iter().collect();
    tagged(a).into_iter().filter(|l| !b.contains(l)).collect()
}

#[test]
fn layout_matches_the_recorded_version() {
    let btf = Btf::from_raw("abi", ABI_OBJECT)
        .expect("open abi.bpf.o")
        .expect("abi.bpf.o has BTF");
    let types = live_types(&btf);

    let in_btf: BTreeSet<&String> = types.iter().map(|t| &t.head).collect();
    let in_header = header_types();
    let missing: Vec<_> = in_header.iter().filter(|h| !in_btf.contains(h)).collect();
    assert!(
        missing.is_empty(),
        "rttfair_abi.h defines {missing:?}, which bpf/abi.bpf.c's anchor does not reference: add them there"
    );
    let foreign: Vec<_> = in_btf.iter().filter(|h| !in_header.contains(**h)).collect();
    assert!(
        foreign.is_empty(),
        "abi.bpf.o's BTF has {foreign:?}, which rttfair_abi.h does not define: the anchor must reference ABI types only"
    );

    let layout = layout_lines(&types);
    let version = super::ABI_VERSION;
    let recorded = std::fs::read_to_string(RECORD).ok();
    let parsed = recorded.as_deref().and_then(parse);
    let bless = std::env::var_os("RTTFAIR_BLESS").is_some();
    match verdict(parsed.as_ref(), version, &layout, bless) {
        Ok(true) => std::fs::write(RECORD, render(version, &layout)).expect("write the record"),
        Ok(false) => {}
        Err(why) => {
            if let Some((_, old)) = &parsed {
                only_in(old, &layout)
                    .iter()
                    .for_each(|l| eprintln!("- {l}"));
                only_in(&layout, old)
                    .iter()
                    .for_each(|l| eprintln!("+ {l}"));
            }
            panic!("{why}");
        }
    }
}

/// The verdicts, without BTF: a change or removal under the same version is
/// refused even when blessing; an addition, or a bump, is recorded only when
/// blessing.
#[test]
fn verdicts() {
    let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let old = (6, lines(&["struct a 4", "  0 4 x __u32"]));
    let moved = lines(&["struct a 4", "  0 4 y __u32"]);
    let added = lines(&["enum e 4", "  E = 0", "struct a 4", "  0 4 x __u32"]);
    let grown = lines(&["struct a 8", "  0 4 x __u32", "  4 4 z __u32"]);
    assert_eq!(verdict(Some(&old), 6, &old.1, false), Ok(false));
    for bless in [false, true] {
        for changed in [&moved, &grown, &Vec::new()] {
            let e = verdict(Some(&old), 6, changed, bless).unwrap_err();
            assert!(
                e.contains("bump RTTFAIR_ABI_VERSION") && e.contains(BLESS),
                "{e}"
            );
        }
        assert!(verdict(Some(&old), 5, &old.1, bless)
            .unwrap_err()
            .contains("only go up"));
    }
    assert!(verdict(Some(&old), 6, &added, false)
        .unwrap_err()
        .contains("no bump needed"));
    assert_eq!(verdict(Some(&old), 6, &added, true), Ok(true));
    assert!(verdict(Some(&old), 7, &moved, false)
        .unwrap_err()
        .contains(BLESS));
    assert_eq!(verdict(Some(&old), 7, &moved, true), Ok(true));
    assert_eq!(verdict(None, 7, &moved, true), Ok(true));
    assert!(verdict(None, 7, &moved, false)
        .unwrap_err()
        .contains("missing"));
    assert_eq!(parse(&render(7, &moved)), Some((7, moved)));
}

/// The shapes the header does not use yet, from
/// `bpf/testdata/abi_layout.bpf.c`: an anonymous union's members are listed
/// in place, bitfields in bits, an enum member by its enum's name, a
/// negative enum value as its unsigned bit pattern.
#[test]
fn reads_anonymous_unions_bitfields_and_enums() {
    static PROBE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/testdata_abi_layout.bpf.o"));
    let btf = Btf::from_raw("abi_layout", PROBE)
        .expect("open testdata_abi_layout.bpf.o")
        .expect("it has BTF");
    let want = [
        "enum layout_probe_sign 4",
        "  LAYOUT_PROBE_NEG = 4294967295",
        "  LAYOUT_PROBE_POS = 7",
        "struct layout_probe 32",
        "  0 4 a __u32",
        "  4 4 b __u32",
        "  4 4 c __u16[2]",
        "  64b 3b d __u8",
        "  67b 5b e __u8",
        "  16 8 f __u64",
        "  24 4 g enum layout_probe_sign",
    ];
    assert_eq!(layout_lines(&live_types(&btf)), want);
}
