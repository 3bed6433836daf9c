//! `bench verifier`: what the verifier and the JIT make of every CCA.

use anyhow::Result;
use rttfair_loader::lifecycle;
use rttfair_loader::{BpfFs, Cca};

/// Per-program verifier and JIT figures of every CCA: instructions as
/// written and as verified, translated and JITed bytes, and the object's
/// size. Loads each CCA in a scratch bpffs root without registering it.
pub fn run() -> Result<()> {
    let scratch = BpfFs::new(format!(
        "/sys/fs/bpf/rttfair-bench-verifier-{}",
        std::process::id()
    ));
    println!(
        "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}",
        "cca", "program", "insns", "verified", "xlated", "jited"
    );
    for cca in Cca::ALL {
        let stats = lifecycle::inspect_programs(cca, &scratch)?;
        let mut total = 0u64;
        for p in &stats {
            total += p.verified_insns as u64;
            println!(
                "{:<8} {:<18} {:>6} {:>9} {:>8} {:>7}",
                cca.name(),
                p.name,
                p.insns,
                p.verified_insns,
                p.xlated_bytes,
                p.jited_bytes
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
