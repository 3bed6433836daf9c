//! The BPF stack a program uses, as the verifier counts it against its
//! 512-byte limit (`MAX_BPF_STACK`).
//!
//! The verifier gives each subprogram (the program's main function and each
//! function it calls through a BPF-to-BPF call) a frame as deep as the
//! deepest stack slot the subprogram touches, in 8-byte slots, and refuses
//! a program if the frames along any chain of calls sum to more than 512
//! bytes (`check_max_stack_depth`). Its log at `BPF_LOG_STATS` level prints
//! the frames ("stack depth 384+128", main first, then the subprograms in
//! instruction order), but as they are after the verifier's own rewrites,
//! which come after that check: an inlined `bpf_loop` adds 24 bytes or more
//! to its caller's frame. So the frames checked are read from the
//! instructions libbpf loaded (main with its subprograms appended): the
//! deepest offset below the frame pointer each subprogram addresses
//! ([`frame_depths`]); the log's figures are shown beside them.

use libbpf_rs::libbpf_sys::{
    bpf_insn, BPF_ADD, BPF_ALU64, BPF_CALL, BPF_DW, BPF_IMM, BPF_JMP, BPF_JMP32, BPF_K, BPF_LD,
    BPF_LDX, BPF_MOV, BPF_PSEUDO_CALL, BPF_PSEUDO_FUNC, BPF_REG_10, BPF_ST, BPF_STX, BPF_X,
};

/// The verifier log level that prints the per-subprogram stack depth (and
/// the processed-instruction count) without a trace of every instruction.
pub const BPF_LOG_STATS: u32 = 4;

/// The verifier's limit on the stack of a chain of calls.
pub const MAX_BPF_STACK: u32 = 512;

/// The per-subprogram stack depths in the verifier log of program `prog`,
/// as libbpf prints a successful load's log at debug level (`prog 'NAME':
/// -- BEGIN PROG LOAD LOG --` ... `-- END PROG LOAD LOG --`). None when the
/// log has no `stack depth` line for it (log level without `BPF_LOG_STATS`).
pub fn parse_stack_depths(libbpf_log: &str, prog: &str) -> Option<Vec<u32>> {
    let begin = format!("prog '{prog}': -- BEGIN PROG LOAD LOG --");
    let start = libbpf_log.find(&begin)? + begin.len();
    let rest = &libbpf_log[start..];
    let body = &rest[..rest.find("-- END PROG LOAD LOG --").unwrap_or(rest.len())];
    let line = body
        .lines()
        .find_map(|l| l.trim().strip_prefix("stack depth "))?;
    line.split('+').map(|d| d.trim().parse().ok()).collect()
}

/// A frame as the verifier adds it up: rounded up to 16 bytes when the
/// program is JITed, to 32 (and at least 32) for the interpreter
/// (`round_up_stack_depth`).
pub fn round_frame(depth: u32, jit: bool) -> u32 {
    if jit {
        depth.div_ceil(16) * 16
    } else {
        depth.max(1).div_ceil(32) * 32
    }
}

fn is_pseudo_call(insn: &bpf_insn) -> bool {
    u32::from(insn.code) == BPF_JMP | BPF_CALL && u32::from(insn.src_reg()) == BPF_PSEUDO_CALL
}

fn is_pseudo_func(insn: &bpf_insn) -> bool {
    u32::from(insn.code) == BPF_LD | BPF_IMM | BPF_DW
        && u32::from(insn.src_reg()) == BPF_PSEUDO_FUNC
}

/// Where the instruction at `i`, a call to a subprogram or a reference to a
/// callback, points (the verifier's `i + imm + 1`); None for any other.
fn callee(insns: &[bpf_insn], i: usize) -> Option<usize> {
    let insn = &insns[i];
    if !is_pseudo_call(insn) && !is_pseudo_func(insn) {
        return None;
    }
    usize::try_from(i as i64 + i64::from(insn.imm) + 1).ok()
}

/// The first instruction of every subprogram, in the verifier's order (0,
/// the main function, then every call or callback target, ascending).
pub fn subprog_starts(insns: &[bpf_insn]) -> Vec<usize> {
    let mut starts: Vec<usize> = std::iter::once(0)
        .chain((0..insns.len()).filter_map(|i| callee(insns, i)))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// Each subprogram's instructions, `start..end`, in [`subprog_starts`]
/// order: a subprogram runs to the next one's start (the last to the end).
fn subprog_ranges(insns: &[bpf_insn]) -> Vec<(usize, usize)> {
    let starts = subprog_starts(insns);
    let ends = starts
        .iter()
        .skip(1)
        .copied()
        .chain(std::iter::once(insns.len()));
    starts.iter().copied().zip(ends).collect()
}

/// Each subprogram's frame as the verifier checks it: the deepest offset
/// below the frame pointer (r10) its instructions load from, store to or
/// take the address of (`rX = r10; rX += -N`, a pointer handed to a
/// helper), rounded up to the verifier's 8-byte slots. Read from the code,
/// not from its paths: an access in dead code would count (clang leaves
/// none).
pub fn frame_depths(insns: &[bpf_insn]) -> Vec<u32> {
    const FP: usize = BPF_REG_10 as usize;
    let (ldx, st, stx) = (BPF_LDX as u8, BPF_ST as u8, BPF_STX as u8);
    let (jmp, jmp32) = (BPF_JMP as u8, BPF_JMP32 as u8);
    let mov64_x = (BPF_ALU64 | BPF_MOV | BPF_X) as u8;
    let add64_k = (BPF_ALU64 | BPF_ADD | BPF_K) as u8;
    subprog_ranges(insns)
        .into_iter()
        .map(|(start, end)| {
            // registers holding r10 + offset (None: anything else)
            let mut fp_off: [Option<i64>; 11] = [None; 11];
            let mut deepest: i64 = 0;
            let mut i = start;
            while i < end {
                let insn = &insns[i];
                let (dst, src) = (usize::from(insn.dst_reg()), usize::from(insn.src_reg()));
                let class = insn.code & 0x07;
                let off = i64::from(insn.off);
                // a load from or a store to the stack
                if (class == ldx && src == FP) || ((class == st || class == stx) && dst == FP) {
                    deepest = deepest.max(-off);
                }
                // what the instruction leaves in the registers
                if insn.code == mov64_x && src == FP && dst <= FP {
                    fp_off[dst] = Some(0);
                } else if insn.code == add64_k && dst <= FP && fp_off[dst].is_some() {
                    let o = fp_off[dst].unwrap_or(0) + i64::from(insn.imm);
                    fp_off[dst] = Some(o);
                    deepest = deepest.max(-o);
                } else if u32::from(insn.code) == BPF_JMP | BPF_CALL {
                    fp_off[..6].iter_mut().for_each(|r| *r = None);
                } else if class != st && class != stx && class != jmp && class != jmp32 {
                    if let Some(r) = fp_off.get_mut(dst) {
                        *r = None;
                    }
                }
                // ld_imm64 takes two slots
                i += if u32::from(insn.code) == BPF_LD | BPF_IMM | BPF_DW {
                    2
                } else {
                    1
                };
            }
            u32::try_from(deepest.max(0))
                .unwrap_or(u32::MAX)
                .div_ceil(8)
                * 8
        })
        .collect()
}

/// The deepest chain of calls from the main function: the sum of its
/// frames, rounded as the verifier rounds them, which the verifier refuses
/// above [`MAX_BPF_STACK`]. `depths` are the per-subprogram frames
/// ([`frame_depths`]). None if they do not match the instructions'
/// subprograms or the calls form a cycle (the verifier refuses recursion, so a loaded
/// program has none). Callbacks (bpf_loop's) count as calls, as they do for
/// the verifier; the rttfair programs use no timers (async callbacks, which
/// run on a stack of their own) and no private stack.
pub fn deepest_chain(insns: &[bpf_insn], depths: &[u32], jit: bool) -> Option<u32> {
    let ranges = subprog_ranges(insns);
    if ranges.len() != depths.len() || ranges.iter().any(|&(s, _)| s >= insns.len()) {
        return None;
    }
    let starts: Vec<usize> = ranges.iter().map(|&(s, _)| s).collect();
    let callees: Vec<Vec<usize>> = (0..starts.len())
        .map(|s| {
            (ranges[s].0..ranges[s].1)
                .filter_map(|i| callee(insns, i))
                .filter_map(|t| starts.binary_search(&t).ok())
                .collect()
        })
        .collect();
    // Memoised depth-first walk; `on_path` catches a cycle.
    fn chain(
        s: usize,
        callees: &[Vec<usize>],
        frames: &[u32],
        memo: &mut [Option<u32>],
        on_path: &mut [bool],
    ) -> Option<u32> {
        if let Some(d) = memo[s] {
            return Some(d);
        }
        if on_path[s] {
            return None;
        }
        on_path[s] = true;
        let mut below = 0;
        for &c in &callees[s] {
            below = below.max(chain(c, callees, frames, memo, on_path)?);
        }
        on_path[s] = false;
        memo[s] = Some(frames[s] + below);
        memo[s]
    }
    let frames: Vec<u32> = depths.iter().map(|&d| round_frame(d, jit)).collect();
    let mut memo = vec![None; starts.len()];
    let mut on_path = vec![false; starts.len()];
    chain(0, &callees, &frames, &mut memo, &mut on_path)
}

/// Whether the kernel JITs BPF programs (`net.core.bpf_jit_enable` not 0),
/// which decides how the verifier rounds frames. Unreadable: assumed JITed
/// (the default on x86-64 and arm64, where the JIT is usually always on).
pub fn kernel_jits() -> bool {
    std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
        .map(|s| s.trim() != "0")
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(code: u32, src: u32, imm: i32) -> bpf_insn {
        let mut i = bpf_insn {
            code: code as u8,
            imm,
            ..Default::default()
        };
        i.set_src_reg(src as u8);
        i
    }
    fn call(imm: i32) -> bpf_insn {
        insn(BPF_JMP | BPF_CALL, BPF_PSEUDO_CALL, imm)
    }
    fn helper(id: i32) -> bpf_insn {
        insn(BPF_JMP | BPF_CALL, 0, id)
    }
    fn nop() -> bpf_insn {
        insn(0xb7, 0, 0) // r0 = 0
    }
    fn exit() -> bpf_insn {
        insn(0x95, 0, 0)
    }

    const LOG: &str = "libbpf: prog 'rf_init': -- BEGIN PROG LOAD LOG --\n\
        verification time 40 usec\nstack depth 296\n\
        processed 304 insns (limit 1000000) max_states_per_insn 0\n\
        -- END PROG LOAD LOG --\n\
        libbpf: prog 'rf_cong_control': -- BEGIN PROG LOAD LOG --\n\
        verification time 4012 usec\nstack depth 384+128\n\
        processed 13150 insns (limit 1000000)\n-- END PROG LOAD LOG --\n";

    #[test]
    fn depths_are_read_per_program() {
        assert_eq!(parse_stack_depths(LOG, "rf_init"), Some(vec![296]));
        assert_eq!(
            parse_stack_depths(LOG, "rf_cong_control"),
            Some(vec![384, 128])
        );
        assert_eq!(parse_stack_depths(LOG, "rf_release"), None);
        // a log without the stats line (level 1 or 2 only)
        let no_stats = "libbpf: prog 'x': -- BEGIN PROG LOAD LOG --\n\
            processed 3 insns\n-- END PROG LOAD LOG --\n\
            libbpf: prog 'y': -- BEGIN PROG LOAD LOG --\nstack depth 8\n-- END PROG LOAD LOG --\n";
        assert_eq!(parse_stack_depths(no_stats, "x"), None);
        assert_eq!(parse_stack_depths(no_stats, "y"), Some(vec![8]));
    }

    fn with_regs(code: u32, dst: u8, src: u8, off: i16, imm: i32) -> bpf_insn {
        let mut i = insn(code, u32::from(src), imm);
        i.set_dst_reg(dst);
        i.off = off;
        i
    }

    #[test]
    fn a_frame_is_the_deepest_slot_addressed_in_8_byte_slots() {
        let insns = [
            call(5),                        // 0: main calls 6
            with_regs(0x62, 10, 0, -4, 7),  // *(u32 *)(r10 - 4) = 7
            with_regs(0xbf, 2, 10, 0, 0),   // r2 = r10
            with_regs(0x07, 2, 0, 0, -300), // r2 += -300
            helper(1),                      // map lookup, key at r10-300
            exit(),
            with_regs(0x79, 1, 10, -16, 0), // 6: r1 = *(u64 *)(r10 - 16)
            with_regs(0xbf, 3, 10, 0, 0),   // r3 = r10
            with_regs(0xb7, 3, 0, 0, 0),    // r3 = 0: no longer the stack
            with_regs(0x07, 3, 0, 0, -400), // r3 += -400: a number
            with_regs(0x7b, 1, 3, -496, 0), // *(u64 *)(r1 - 496) = r3: not r10
            exit(),
        ];
        assert_eq!(frame_depths(&insns), vec![304, 16]);
        assert_eq!(
            deepest_chain(&insns, &frame_depths(&insns), true),
            Some(320)
        );
    }

    #[test]
    fn frames_round_as_the_verifier_rounds_them() {
        assert_eq!(round_frame(0, true), 0);
        assert_eq!(round_frame(88, true), 96);
        assert_eq!(round_frame(384, true), 384);
        assert_eq!(round_frame(0, false), 32);
        assert_eq!(round_frame(88, false), 96);
        assert_eq!(round_frame(100, false), 128);
    }

    #[test]
    fn a_single_function_is_its_own_frame() {
        let insns = [nop(), helper(1), exit()];
        assert_eq!(subprog_starts(&insns), vec![0]);
        // the verifier's 296 bytes, rounded to the JIT's 16
        assert_eq!(deepest_chain(&insns, &[296], true), Some(304));
        assert_eq!(deepest_chain(&insns, &[296, 8], true), None);
    }

    #[test]
    fn the_deepest_chain_sums_the_frames_along_it() {
        // main: calls A (at 5) twice and B (at 8); A calls C (at 10).
        let insns = [
            call(4), // 0 -> 5
            call(3), // 1 -> 5
            call(5), // 2 -> 8
            nop(),   // 3
            exit(),  // 4
            call(4), // 5: A -> 10
            helper(5),
            exit(), // 7
            nop(),  // 8: B
            exit(), // 9
            nop(),  // 10: C
            exit(), // 11
        ];
        assert_eq!(subprog_starts(&insns), vec![0, 5, 8, 10]);
        // main 384, A 40, B 200, C 24 (JIT: 384, 48, 208, 32): main+B = 592
        // beats main+A+C = 464
        assert_eq!(deepest_chain(&insns, &[384, 40, 200, 24], true), Some(592));
        assert_eq!(deepest_chain(&insns, &[384, 40, 100, 24], true), Some(496));
        // interpreter rounding (384, 64, 128, 32): main+B = 512 beats 480
        assert_eq!(deepest_chain(&insns, &[384, 40, 100, 24], false), Some(512));
    }

    #[test]
    fn a_callback_counts_as_a_call_and_a_cycle_as_unknown() {
        // main references a callback at 3 (ld_imm64 takes two slots)
        let insns = [
            insn(BPF_LD | BPF_IMM | BPF_DW, BPF_PSEUDO_FUNC, 2), // 0 -> 3
            insn(0, 0, 0),
            exit(),
            nop(), // 3: callback
            exit(),
        ];
        assert_eq!(subprog_starts(&insns), vec![0, 3]);
        assert_eq!(deepest_chain(&insns, &[64, 32], true), Some(96));
        // A calls itself: the verifier refuses it, the walk reports nothing
        let rec = [call(1), exit(), call(-1), exit()];
        assert_eq!(subprog_starts(&rec), vec![0, 2]);
        assert_eq!(deepest_chain(&rec, &[16, 16], true), None);
    }
}
