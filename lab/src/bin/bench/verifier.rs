//! `bench verifier`: what the verifier and the JIT make of every CCA.

use anyhow::Result;
use rttfair_loader::lifecycle;
use rttfair_loader::{BpfFs, Cca};

/// Per-program verifier and JIT figures of every CCA: instructions as
/// written and as verified, translated and JITed bytes, the stack (the
/// deepest chain of calls, which the verifier refuses above 512 bytes, and
/// each subprogram's frame, main first; where the verifier log prints other
/// frames, after its own rewrites, those too), and the object's size. Loads
/// each CCA in a scratch bpffs root without registering it.
pub fn run() -> Result<()> {
    let scratch = BpfFs::new(format!(
        "/sys/fs/bpf/rttfair-bench-verifier-{}",
        std::process::id()
    ));
    println!(
        "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7} {:>6}  frames",
        "cca", "program", "insns", "verified", "xlated", "jited", "stack"
    );
    for cca in Cca::ALL {
        let stats = lifecycle::inspect_programs(cca, &scratch)?;
        let mut total = 0u64;
        for p in &stats {
            total += p.verified_insns as u64;
            let join = |f: &[u32]| f.iter().map(u32::to_string).collect::<Vec<_>>().join("+");
            let mut frames = join(&p.stack_frames);
            if !p.stack_frames_logged.is_empty() && p.stack_frames_logged != p.stack_frames {
                frames = format!("{frames} (log {})", join(&p.stack_frames_logged));
            }
            println!(
                "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7} {:>6}  {}",
                cca.name(),
                p.name,
                p.insns,
                p.verified_insns,
                p.xlated_bytes,
                p.jited_bytes,
                p.stack_bytes.map_or("?".into(), |b| b.to_string()),
                frames
            );
        }
        let obj = rttfair_loader::objects::cca(cca).len();
        println!(
            "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}   object {} bytes",
            cca.name(),
            "TOTAL",
            "",
            total,
            "",
            "",
            obj
        );
    }
    scratch.remove_if_empty();
    Ok(())
}
