//! `rttfairctl doctor`, and the same checks before `load`.

use anyhow::{bail, Result};
use rttfair_loader::doctor::{self, Check, Inputs, Scope};
use rttfair_loader::{BpfFs, Cca};

/// The use `doctor --for` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Use {
    /// Loading CCAs (`load`, `swap`), native bbr's kfuncs included.
    Load,
    /// The metrics daemon.
    Daemon,
    /// The lab and the demo (namespaces, qdiscs, iperf3).
    Lab,
}

impl Use {
    fn scope(self) -> Scope {
        match self {
            Use::Load => Scope::Load { bbr_native: true },
            Use::Daemon => Scope::Daemon,
            Use::Lab => Scope::Lab,
        }
    }
}

/// Print one line per check (or, with `json`, one document); fail naming
/// the checks that failed.
pub fn run(fs: &BpfFs, json: bool, what: Option<Use>) -> Result<()> {
    let checks = doctor::run(
        &Inputs::from_host(fs.root()),
        what.map_or(Scope::All, Use::scope),
    );
    print!("{}", render(&checks, what, json)?);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.check.as_str())
        .collect();
    if !failed.is_empty() {
        bail!("{} check(s) failed: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// What `doctor` prints on stdout: the lines, or one JSON document
/// `{"for", "ok", "checks": [{"check", "ok", "detail"}]}`.
fn render(checks: &[Check], what: Option<Use>, json: bool) -> Result<String> {
    if json {
        let name = match what {
            None => "all",
            Some(Use::Load) => "load",
            Some(Use::Daemon) => "daemon",
            Some(Use::Lab) => "lab",
        };
        let doc = serde_json::json!({
            "for": name,
            "ok": checks.iter().all(|c| c.ok),
            "checks": checks,
        });
        return Ok(format!("{}\n", serde_json::to_string(&doc)?));
    }
    Ok(checks.iter().map(|c| c.line() + "\n").collect())
}

/// Before `load`: the doctor's checks for loading `ccas`, refused with
/// the first failing check's line (nothing is touched).
pub fn check_before_load(fs: &BpfFs, ccas: &[Cca]) -> Result<()> {
    let scope = Scope::Load {
        bbr_native: ccas.contains(&Cca::BbrNative),
    };
    match doctor::first_missing(&doctor::run(&Inputs::from_host(fs.root()), scope)) {
        Some(line) => bail!("{line} (`rttfairctl doctor --for load` checks everything)"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, ok: bool) -> Check {
        Check {
            check: name.into(),
            ok,
            detail: "d".into(),
        }
    }

    /// `--json` prints exactly one JSON document and nothing else.
    #[test]
    fn json_is_one_document_and_only_json() {
        let checks = [check("kernel", true), check("tool iperf3", false)];
        let text = render(&checks, Some(Use::Lab), true).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["for"], "lab");
        assert_eq!(v["ok"], false);
        assert_eq!(v["checks"][1]["check"], "tool iperf3");
        assert_eq!(v["checks"][1]["ok"], false);
    }

    #[test]
    fn text_is_one_line_per_check() {
        let checks = [check("kernel", true), check("btf", false)];
        assert_eq!(
            render(&checks, None, false).unwrap(),
            "kernel: ok (d)\nbtf: missing: d\n"
        );
    }
}
