//! Just enough of a BTF reader for the doctor's feature probes: type names,
//! struct members, enum values and function prototypes' parameter counts.
//! (Format: the kernel's Documentation/bpf/btf.rst.) Module BTF (split
//! BTF, /sys/kernel/btf/<module>) continues the ids and string offsets of
//! vmlinux's, so it is read on top of a base.

use std::path::Path;

const MAGIC: u16 = 0xeb9f;
const HEADER_MIN: usize = 24;

// BTF_KIND_* (include/uapi/linux/btf.h)
const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const DECL_TAG: u32 = 17;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

/// One type: its kind, name, the `size`/`type` word and the raw bytes that
/// follow it (members, parameters, enum values).
#[derive(Debug, Clone)]
struct Type {
    kind: u32,
    name_off: u32,
    vlen: u32,
    size_or_type: u32,
    extra: Vec<u8>,
}

/// Parsed BTF (vmlinux's, or a module's on top of it).
#[derive(Debug)]
pub struct Btf {
    /// Type id `base_count + 1 + i` is `types[i]`.
    types: Vec<Type>,
    strings: Vec<u8>,
    big_endian: bool,
    base: Option<Box<Btf>>,
}

impl Btf {
    /// Read the BTF file at `path` (vmlinux's).
    pub fn read(path: &Path) -> Result<Btf, String> {
        let data = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        Btf::parse(&data, None).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Read a module's split BTF on top of `base` (vmlinux's).
    pub fn read_split(path: &Path, base: Btf) -> Result<Btf, String> {
        let data = std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))?;
        Btf::parse(&data, Some(base)).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(data: &[u8], base: Option<Btf>) -> Result<Btf, String> {
        if data.len() < HEADER_MIN {
            return Err("not BTF (too short)".into());
        }
        let big_endian = match [data[0], data[1]] {
            m if u16::from_le_bytes(m) == MAGIC => false,
            m if u16::from_be_bytes(m) == MAGIC => true,
            _ => return Err("not BTF (bad magic)".into()),
        };
        let word = |at: usize| -> Result<u32, String> {
            let b: [u8; 4] = data
                .get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .ok_or("truncated")?;
            Ok(if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            })
        };
        let hdr_len = word(4)? as usize;
        let (type_off, type_len) = (word(8)? as usize, word(12)? as usize);
        let (str_off, str_len) = (word(16)? as usize, word(20)? as usize);
        let section = |off: usize, len: usize| {
            let start = hdr_len.checked_add(off).ok_or("bad header")?;
            let end = start.checked_add(len).ok_or("bad header")?;
            data.get(start..end)
                .ok_or_else(|| "truncated section".to_string())
        };
        let type_bytes = section(type_off, type_len)?;
        let strings = section(str_off, str_len)?.to_vec();
        let mut types = Vec::new();
        let mut at = 0;
        let rd = |b: &[u8], at: usize| -> Result<u32, String> {
            let w: [u8; 4] = b
                .get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .ok_or("truncated type")?;
            Ok(if big_endian {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            })
        };
        while at < type_bytes.len() {
            let name_off = rd(type_bytes, at)?;
            let info = rd(type_bytes, at + 4)?;
            let size_or_type = rd(type_bytes, at + 8)?;
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let extra_len = match kind {
                INT | VAR | DECL_TAG => 4,
                ARRAY => 12,
                STRUCT | UNION | DATASEC => 12 * vlen as usize,
                ENUM | FUNC_PROTO => 8 * vlen as usize,
                ENUM64 => 12 * vlen as usize,
                PTR | 7 | TYPEDEF | VOLATILE | CONST | RESTRICT | FUNC | 16 | TYPE_TAG => 0,
                k => return Err(format!("unknown BTF kind {k}")),
            };
            let start = at + 12;
            let extra = type_bytes
                .get(start..start + extra_len)
                .ok_or("truncated type")?
                .to_vec();
            types.push(Type {
                kind,
                name_off,
                vlen,
                size_or_type,
                extra,
            });
            at = start + extra_len;
        }
        Ok(Btf {
            types,
            strings,
            big_endian,
            base: base.map(Box::new),
        })
    }

    fn base_count(&self) -> usize {
        self.base
            .as_ref()
            .map_or(0, |b| b.base_count() + b.types.len())
    }

    fn base_str_len(&self) -> usize {
        self.base
            .as_ref()
            .map_or(0, |b| b.base_str_len() + b.strings.len())
    }

    fn string(&self, off: u32) -> &str {
        let off = off as usize;
        let base_len = self.base_str_len();
        if off < base_len {
            return self.base.as_ref().map_or("", |b| b.string(off as u32));
        }
        let rest = self.strings.get(off - base_len..).unwrap_or(&[]);
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    fn get(&self, id: u32) -> Option<&Type> {
        let id = id as usize;
        let base = self.base_count();
        if id == 0 {
            None
        } else if id <= base {
            self.base.as_ref().and_then(|b| b.get(id as u32))
        } else {
            self.types.get(id - base - 1)
        }
    }

    fn word(&self, t: &Type, at: usize) -> u32 {
        let b: [u8; 4] = t.extra[at..at + 4].try_into().expect("4 bytes");
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    /// Ids of this BTF's own types (not the base's) of `kind` named `name`.
    fn own_named(&self, kind: u32, name: &str) -> Option<&Type> {
        self.types
            .iter()
            .find(|t| t.kind == kind && self.string(t.name_off) == name)
    }

    /// A type of `kind` named `name`, here or in the base.
    fn named(&self, kind: u32, name: &str) -> Option<&Type> {
        self.own_named(kind, name)
            .or_else(|| self.base.as_ref().and_then(|b| b.named(kind, name)))
    }

    /// Follow typedefs and qualifiers from `id`.
    fn resolve(&self, mut id: u32) -> Option<&Type> {
        for _ in 0..32 {
            let t = self.get(id)?;
            match t.kind {
                TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.size_or_type,
                _ => return Some(t),
            }
        }
        None
    }

    /// Does a struct `name` exist?
    pub fn has_struct(&self, name: &str) -> bool {
        self.named(STRUCT, name).is_some()
    }

    /// Does a function `name` exist (a kernel function, helper or kfunc)?
    pub fn has_func(&self, name: &str) -> bool {
        self.named(FUNC, name).is_some()
    }

    /// The number of parameters of function `name`, if it exists.
    pub fn func_params(&self, name: &str) -> Option<u32> {
        let f = self.named(FUNC, name)?;
        let proto = self.resolve(f.size_or_type)?;
        (proto.kind == FUNC_PROTO).then_some(proto.vlen)
    }

    /// Does `enum_name` have the value `value`?
    pub fn has_enum_value(&self, enum_name: &str, value: &str) -> bool {
        let Some(e) = self.named(ENUM, enum_name) else {
            return false;
        };
        (0..e.vlen as usize).any(|i| self.string(self.word(e, i * 8)) == value)
    }

    /// The number of parameters of the function pointer `member` of struct
    /// `strukt`: `None` if either is missing or the member is no function
    /// pointer.
    pub fn member_fn_params(&self, strukt: &str, member: &str) -> Option<u32> {
        let s = self.named(STRUCT, strukt)?;
        let ty = (0..s.vlen as usize)
            .find(|&i| self.string(self.word(s, i * 12)) == member)
            .map(|i| self.word(s, i * 12 + 4))?;
        let ptr = self.resolve(ty)?;
        if ptr.kind != PTR {
            return None;
        }
        let proto = self.resolve(ptr.size_or_type)?;
        (proto.kind == FUNC_PROTO).then_some(proto.vlen)
    }
}

/// Writes small BTF blobs for tests: the shapes the probes look at.
#[cfg(test)]
pub mod fake {
    /// A BTF under construction (little-endian).
    #[derive(Default)]
    pub struct Builder {
        types: Vec<u8>,
        strings: Vec<u8>,
        count: u32,
    }

    impl Builder {
        pub fn new() -> Self {
            Builder {
                strings: vec![0],
                ..Default::default()
            }
        }

        fn name(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            let off = self.strings.len() as u32;
            self.strings.extend_from_slice(s.as_bytes());
            self.strings.push(0);
            off
        }

        fn push(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            size_or_type: u32,
            extra: &[u32],
        ) -> u32 {
            let n = self.name(name);
            for w in [n, kind << 24 | vlen, size_or_type] {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
            for w in extra {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
            self.count += 1;
            self.count
        }

        pub fn int(&mut self, name: &str) -> u32 {
            self.push(name, super::INT, 0, 4, &[32])
        }

        pub fn ptr(&mut self, to: u32) -> u32 {
            self.push("", super::PTR, 0, to, &[])
        }

        /// A function prototype with `params` parameters of type `arg`.
        pub fn proto(&mut self, params: u32, arg: u32) -> u32 {
            let extra: Vec<u32> = (0..params).flat_map(|_| [0, arg]).collect();
            self.push("", super::FUNC_PROTO, params, 0, &extra)
        }

        pub fn func(&mut self, name: &str, proto: u32) -> u32 {
            self.push(name, super::FUNC, 1, proto, &[])
        }

        /// A struct whose members are `(name, type)`.
        pub fn strukt(&mut self, name: &str, members: &[(&str, u32)]) -> u32 {
            let mut extra = Vec::new();
            for (i, (m, ty)) in members.iter().enumerate() {
                let n = self.name(m);
                extra.extend([n, *ty, i as u32 * 64]);
            }
            self.push(
                name,
                super::STRUCT,
                members.len() as u32,
                8 * members.len() as u32,
                &extra,
            )
        }

        pub fn enumeration(&mut self, name: &str, values: &[&str]) -> u32 {
            let mut extra = Vec::new();
            for (i, v) in values.iter().enumerate() {
                let n = self.name(v);
                extra.extend([n, i as u32]);
            }
            self.push(name, super::ENUM, values.len() as u32, 4, &extra)
        }

        pub fn bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            out.extend_from_slice(&super::MAGIC.to_le_bytes());
            out.extend([1, 0]); // version, flags
            let words = [
                24u32,
                0,
                self.types.len() as u32,
                self.types.len() as u32,
                self.strings.len() as u32,
            ];
            for w in words {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::Builder;
    use super::Btf;

    #[test]
    fn reads_members_functions_and_enums_it_wrote() {
        let mut b = Builder::new();
        let int = b.int("int");
        let p4 = b.proto(4, int);
        let pp4 = b.ptr(p4);
        let p1 = b.proto(1, int);
        let pp1 = b.ptr(p1);
        b.strukt(
            "tcp_congestion_ops",
            &[("ssthresh", pp1), ("cong_control", pp4)],
        );
        b.func("bbr_main", p4);
        b.enumeration(
            "bpf_link_type",
            &["BPF_LINK_TYPE_UNSPEC", "BPF_LINK_TYPE_STRUCT_OPS"],
        );
        let btf = Btf::parse(&b.bytes(), None).unwrap();
        assert_eq!(
            btf.member_fn_params("tcp_congestion_ops", "cong_control"),
            Some(4)
        );
        assert_eq!(
            btf.member_fn_params("tcp_congestion_ops", "ssthresh"),
            Some(1)
        );
        assert_eq!(btf.member_fn_params("tcp_congestion_ops", "nope"), None);
        assert_eq!(btf.func_params("bbr_main"), Some(4));
        assert!(!btf.has_func("bbr_init"));
        assert!(btf.has_enum_value("bpf_link_type", "BPF_LINK_TYPE_STRUCT_OPS"));
        assert!(!btf.has_enum_value("bpf_link_type", "BPF_LINK_TYPE_NETKIT"));
        assert!(btf.has_struct("tcp_congestion_ops"));
    }

    /// A module's BTF names types and strings of its base by their ids and
    /// offsets there.
    #[test]
    fn split_btf_continues_the_base() {
        let mut base = Builder::new();
        let int = base.int("int");
        let p4 = base.proto(4, int);
        let base_btf = Btf::parse(&base.bytes(), None).unwrap();
        // The module's own string table starts after the base's.
        let mut m = Vec::new();
        let base_strings = base_btf.strings.len() as u32;
        let name = b"bbr_main\0";
        let mut strings = vec![0u8];
        let name_off = base_strings + strings.len() as u32;
        strings.extend_from_slice(name);
        let mut types = Vec::new();
        for w in [name_off, 12 << 24 | 1, p4] {
            types.extend_from_slice(&u32::to_le_bytes(w));
        }
        m.extend_from_slice(&0xeb9fu16.to_le_bytes());
        m.extend([1, 0]);
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        m.extend_from_slice(&types);
        m.extend_from_slice(&strings);
        let module = Btf::parse(&m, Some(base_btf)).unwrap();
        assert_eq!(module.func_params("bbr_main"), Some(4));
    }

    #[test]
    fn refuses_what_is_not_btf() {
        assert!(Btf::parse(b"hello, this is not BTF at all", None).is_err());
        let mut b = Builder::new();
        b.int("int");
        let mut bytes = b.bytes();
        bytes.truncate(bytes.len() - 8);
        assert!(Btf::parse(&bytes, None).is_err());
    }

    /// This machine's own BTF, where it has one: every probe the doctor
    /// makes answers (the kernel this was developed on is 6.18).
    #[test]
    fn reads_this_kernels_btf() {
        let path = std::path::Path::new(crate::preflight::VMLINUX_BTF);
        if !path.exists() {
            return;
        }
        let btf = Btf::read(path).unwrap();
        assert!(btf.has_struct("tcp_congestion_ops"));
        assert!(btf
            .member_fn_params("tcp_congestion_ops", "cong_control")
            .is_some());
    }
}
