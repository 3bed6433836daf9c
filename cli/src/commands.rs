//! Dispatch of the subcommands to the library crates.

use std::time::Duration;

use std::path::Path;

use anyhow::{bail, Context, Result};
use rttfair_loader::lifecycle::{self, LoadOptions, LoadOutcome};
use rttfair_loader::{flows::FlowReader, BpfFs, Cca};
use serde_json::json;

use crate::interrupt::{Interrupted, Interrupts};
use crate::view;
use crate::{Cli, Command};

/// Route each subcommand to its handler; every handler that reports data
/// prints it through [`Out`], as text or (with `--json`) as JSON.
pub fn run(cli: Cli) -> Result<()> {
    let fs = BpfFs::new(&cli.bpffs);
    let out = Out { json: cli.json };
    match cli.command {
        Command::Load {
            ccas,
            flows_max,
            object,
            name,
        } => load(
            &fs,
            &out,
            &ccas,
            flows_max,
            object.as_deref(),
            name.as_deref(),
        ),
        Command::Unload {
            ccas,
            force,
            migrate_to,
        } => unload(&fs, &out, &ccas, force, migrate_to.as_deref()),
        Command::Swap { cca, object } => swap(&fs, &out, &cca, object.as_deref()),
        Command::Migrate {
            from,
            to,
            netns,
            dst,
            port,
        } => migrate(&out, &from, &to, netns, dst, port),
        Command::Default { cca, netns } => set_default(&out, &cca, netns),
        Command::Attach { cgroup, cca } => {
            rttfair_loader::cgroup::attach(&fs, &cgroup, &cca)?;
            out.print(
                json!({ "cgroup": cgroup, "cca": cca }),
                format_args!("{}: new connections get {cca}", cgroup.display()),
            )
        }
        Command::Detach { cgroup } => {
            let cca = rttfair_loader::cgroup::detach(&fs, &cgroup)?;
            out.print(
                json!({ "cgroup": cgroup, "detached": cca }),
                format_args!("{}: no longer sets {cca}", cgroup.display()),
            )
        }
        Command::List => list(&fs, &out),
        Command::Flows { watch, cca, native } => flows(&fs, &out, watch, cca.as_deref(), native),
        Command::Set { name, value } => {
            // Another ABI's CCAs keep their tunables in maps this build
            // cannot see: say so and how to fix it, not "not loaded".
            rttfair_loader::installed::check(&fs)?;
            let v = rttfair_loader::tunables::set(&fs, &name, &value)?;
            out.print(
                serde_json::to_value(&v)?,
                format_args!("{} = {}{}", v.name, v.value, v.unit),
            )
        }
        Command::Get { name } => {
            rttfair_loader::installed::check(&fs)?;
            let values = rttfair_loader::tunables::get(&fs, name.as_deref())?;
            out.print(
                serde_json::to_value(&values)?,
                format_args!("{}", view::tunables_text(name.as_deref(), &values)),
            )
        }
        Command::Daemon {
            config,
            listen,
            check_config,
        } => daemon(&fs, &out, config.as_deref(), listen, check_config),
        Command::Lab { command } => crate::lab::run(&fs, command, out.json),
        Command::Demo {
            seconds,
            keep_loaded,
            aqm,
            out: dir,
        } => crate::demo::run(
            &fs,
            &crate::demo::DemoOptions {
                seconds,
                keep_loaded,
                out: dir,
                json: out.json,
                aqm,
            },
        ),
        Command::Completions { shell } => {
            use std::io::Write;
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "rttfairctl", &mut script);
            // A closed pipe (`| head`) is the reader's choice, not an error.
            match std::io::stdout().write_all(&script) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => Ok(r?),
            }
        }
        Command::Man { dir } => crate::man::write_all(&dir),
        Command::Doctor { for_use } => crate::doctor::run(&fs, out.json, for_use),
    }
}

/// How a command prints what it reports: a line of text, or the same facts
/// as one JSON value with `--json`.
pub struct Out {
    pub json: bool,
}

impl Out {
    pub fn print(&self, json: serde_json::Value, text: std::fmt::Arguments) -> Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(&json)?);
        } else {
            println!("{text}");
        }
        Ok(())
    }
}

fn swap(fs: &BpfFs, out: &Out, cca: &str, object: Option<&Path>) -> Result<()> {
    let cca: Cca = cca.parse()?;
    let object = object
        .map(|p| std::fs::read(p).with_context(|| format!("read {}", p.display())))
        .transpose()?;
    // A signal waits until the swap is complete (a second ends it at once).
    let _interrupts = Interrupts::catch()?;
    let r = lifecycle::update(
        cca,
        fs,
        &LoadOptions {
            flows_max: None,
            object,
        },
    )?;
    // The operator's object now: a lab that had loaded it no longer owns
    // it (nor unloads it), and cannot vouch for which object it runs.
    // Swapped either way: a marker left in place is said, not fatal.
    if let Err(e) = rttfair_loader::lease::adopt(fs, cca) {
        tracing::warn!("{e:#}");
    }
    out.print(
        json!({ "cca": cca.name(), "swapped": true, "sockets_on_previous": r.sockets_on_previous }),
        format_args!(
            "{cca}: swapped in place; new sockets get the new build, {} keep the previous one until they close or are migrated",
            match r.sockets_on_previous {
                Some(n) => format!("{n} open socket(s)"),
                // The previous build was of another ABI: its counters are
                // not this build's to read.
                None => "its open sockets (uncounted: the previous build was of another ABI)".into(),
            }
        ),
    )
}

fn migrate(
    out: &Out,
    from: &str,
    to: &str,
    netns: Option<String>,
    dst: Option<String>,
    port: Option<u16>,
) -> Result<()> {
    use rttfair_loader::migrate::{parse_prefix, Filter};
    let filter = Filter {
        dst: dst.as_deref().map(parse_prefix).transpose()?,
        port,
    };
    let r = rttfair_loader::migrate::migrate_all(from, to, netns.as_deref(), &filter)?;
    if r.moved == 0 && r.failed.is_empty() {
        bail!(
            "no open connection on {from} matches{}",
            describe(&netns, &dst, port)
        );
    }
    let line = migrate_outcome(&r, from, to)?;
    // Printed only when every matched connection moved: nothing failed.
    out.print(
        json!({ "from": from, "to": to, "moved": r.moved, "failed": {} }),
        format_args!("{line}"),
    )
}

/// What `migrate` says of `r` once something matched: its line when every
/// matched connection moved, else an error (exit 1) even if some moved, so
/// `migrate && unload` or a rollout stops instead of taking it for done.
fn migrate_outcome(r: &rttfair_loader::migrate::Report, from: &str, to: &str) -> Result<String> {
    use rttfair_loader::migrate::errno_text;
    let moved = format!("moved {} connection(s) from {from} to {to}", r.moved);
    if r.failed.is_empty() {
        return Ok(moved);
    }
    let why: Vec<String> = r
        .failed
        .iter()
        .map(|(e, n)| format!("{} ({n})", errno_text(*e)))
        .collect();
    bail!(
        "{moved}; {} matched but could not be moved: {}",
        r.failed_total(),
        why.join(", ")
    )
}

fn set_default(out: &Out, cca: &str, netns: Option<String>) -> Result<()> {
    match &netns {
        Some(ns) => {
            let c = cca.to_string();
            rttfair_loader::kernel::in_netns(ns, move || {
                rttfair_loader::kernel::set_default_here(&c)
            })?
        }
        None => rttfair_loader::kernel::set_default_here(cca)?,
    }
    out.print(
        json!({ "default": cca, "netns": netns }),
        format_args!(
            "default congestion control{}: {cca}",
            netns
                .as_ref()
                .map(|n| format!(" of netns {n}"))
                .unwrap_or_default()
        ),
    )
}

/// Serve metrics; with `check_config`, only say what the config asks for
/// and which capabilities that needs (touches nothing).
fn daemon(
    fs: &BpfFs,
    out: &Out,
    config: Option<&Path>,
    listen: Option<std::net::SocketAddr>,
    check_config: bool,
) -> Result<()> {
    let mut c = rttfair_daemon::Config::load(config)?;
    if let Some(l) = listen {
        c.listen = l;
    }
    if std::env::var_os("RTTFAIR_BPFFS").is_some() || cli_bpffs_given(fs) {
        c.bpffs = fs.root().to_path_buf();
    }
    if check_config {
        // The peer hash key as the daemon would read it at start.
        c.peer_labels()?;
        let caps: Vec<&str> = c.required_caps().iter().map(|c| c.name()).collect();
        return out.print(
            json!({
                "listen": c.listen.to_string(),
                "bpffs": c.bpffs,
                "load": c.load,
                "capabilities": caps,
            }),
            format_args!(
                "config ok: listen {}, bpffs {}, load [{}], needs {}",
                c.listen,
                c.bpffs.display(),
                c.load.join(", "),
                caps.join(" + ")
            ),
        );
    }
    rttfair_daemon::run(c)
}

fn describe(netns: &Option<String>, dst: &Option<String>, port: Option<u16>) -> String {
    let mut parts = Vec::new();
    if let Some(n) = netns {
        parts.push(format!("netns {n}"));
    }
    if let Some(d) = dst {
        parts.push(format!("dst {d}"));
    }
    if let Some(p) = port {
        parts.push(format!("port {p}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Parse every name before touching the kernel, so a typo changes nothing.
fn parse_ccas(names: &[String]) -> Result<Vec<Cca>> {
    let mut out = Vec::new();
    for n in names {
        let c: Cca = n.parse()?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

fn load(
    fs: &BpfFs,
    out: &Out,
    names: &[String],
    flows_max: Option<u32>,
    object: Option<&Path>,
    name: Option<&str>,
) -> Result<()> {
    let ccas = match (parse_ccas(names)?.as_slice(), name) {
        (ccas, None) => ccas.to_vec(),
        (&[cca], Some(name)) => vec![cca.second_name(name)?],
        (_, Some(_)) => bail!("--name takes exactly one CCA"),
    };
    // What the host lacks, said before anything is touched.
    crate::doctor::check_before_load(fs, &ccas)?;
    let object = match object {
        None => None,
        Some(_) if ccas.len() != 1 => bail!("--object takes exactly one CCA"),
        Some(p) => Some(std::fs::read(p).with_context(|| format!("read {}", p.display()))?),
    };
    let opts = LoadOptions { flows_max, object };
    // All or nothing, also when a signal comes: it is noted, and the CCAs
    // this invocation registered are unloaded again before it exits.
    let interrupts = Interrupts::catch()?;
    let mut done = Vec::new();
    let mut report = Vec::new();
    for cca in &ccas {
        if let Some(signal) = interrupts.caught() {
            let note = roll_back(fs, &done);
            return Err(Interrupted { signal, note }.into());
        }
        match lifecycle::load(*cca, fs, &opts) {
            Ok(outcome) => {
                // A marker left in place is said, not fatal: the CCA is loaded.
                let from_lab = outcome == LoadOutcome::AlreadyLoaded
                    && rttfair_loader::lease::adopt(fs, *cca).unwrap_or_else(|e| {
                        tracing::warn!("{e:#}");
                        false
                    });
                let what = match outcome {
                    LoadOutcome::Loaded => "loaded",
                    LoadOutcome::AlreadyLoaded if from_lab => {
                        "already loaded by a running lab; now yours (the lab will leave it registered)"
                    }
                    LoadOutcome::AlreadyLoaded => "already loaded",
                    LoadOutcome::Repaired => {
                        "loaded (repaired: removed pins an interrupted run left)"
                    }
                };
                report.push((*cca, what));
                if outcome != LoadOutcome::AlreadyLoaded {
                    done.push(*cca);
                }
            }
            Err(e) if done.is_empty() => return Err(e.into()),
            Err(e) => bail!("{e}{}", roll_back(fs, &done)),
        }
    }
    if let Some(signal) = interrupts.caught() {
        let note = roll_back(fs, &done);
        return Err(Interrupted { signal, note }.into());
    }
    // A flow map that existed keeps its size: said when it is not the one
    // asked for, since --flows-max was then not applied.
    let capacity = flows_max.and_then(|_| FlowReader::open(fs).ok().map(|r| r.capacity()));
    // Printed once all are in: a failure prints nothing but the error.
    let mut text: Vec<String> = report.iter().map(|(c, w)| format!("{c}: {w}")).collect();
    if let (Some(want), Some(have)) = (flows_max, capacity) {
        if want != have {
            text.push(format!(
                "the flow map keeps its {have} entries, not --flows-max {want}: it existed before this load, and keeps its size until every CCA is unloaded"
            ));
        }
    }
    out.print(
        json!(report
            .iter()
            .map(|(c, w)| json!({ "cca": c.name(), "outcome": w, "flow_map_entries": capacity }))
            .collect::<Vec<_>>()),
        format_args!("{}", text.join("\n")),
    )
}

/// Unload `done` again (a `load` that stopped part way), forced: they were
/// registered moments ago by this command. Returns what to add to the
/// error line: what was unloaded, and what could not be and stays loaded.
fn roll_back(fs: &BpfFs, done: &[Cca]) -> String {
    let mut undone = Vec::new();
    let mut kept = Vec::new();
    for &c in done {
        match lifecycle::unregister(c, fs, true) {
            Ok(()) => undone.push(c.name()),
            Err(e) => kept.push(format!("{c} stays loaded ({e})")),
        }
    }
    let mut note = String::new();
    if !undone.is_empty() {
        note += &format!("; unloaded {} again", undone.join(", "));
    }
    if !kept.is_empty() {
        note += &format!("; rollback failed: {}", kept.join("; "));
    }
    note
}

fn unload(
    fs: &BpfFs,
    out: &Out,
    names: &[String],
    force: bool,
    migrate_to: Option<&str>,
) -> Result<()> {
    // Not deduplicated: the loader refuses a CCA named twice.
    let ccas = names
        .iter()
        .map(|n| n.parse::<Cca>())
        .collect::<Result<Vec<_>, _>>()?;
    // A signal waits until the unload is complete (a second ends it at once):
    // dying between a migration and the unregisters would leave both half done.
    let _interrupts = Interrupts::catch()?;
    let done = lifecycle::unload_all(&ccas, fs, force, migrate_to)?;
    let mut text: Vec<String> = done
        .iter()
        .filter_map(|u| u.migrated.map(|n| (u.cca, n)))
        .map(|(c, n)| format!("{c}: moved {n} socket(s) to {}", migrate_to.unwrap_or("")))
        .collect();
    text.extend(done.iter().map(|u| format!("{}: unloaded", u.cca)));
    out.print(
        json!(done
            .iter()
            .map(|u| json!({ "cca": u.cca.name(), "unloaded": true, "migrated": u.migrated, "migrated_to": migrate_to }))
            .collect::<Vec<_>>()),
        format_args!("{}", text.join("\n")),
    )
}

fn list(fs: &BpfFs, out: &Out) -> Result<()> {
    let status = view::Status::gather(fs)?;
    if out.json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", status.table());
    }
    Ok(())
}

fn flows(
    fs: &BpfFs,
    out: &Out,
    watch: Option<Duration>,
    cca: Option<&str>,
    native: bool,
) -> Result<()> {
    let filter = cca.map(str::parse::<Cca>).transpose()?;
    if let Some(c) = filter.filter(|c| *c != c.base()) {
        bail!(
            "{c}'s flows export as {}'s: `flows --cca {}` lists them with the others",
            c.base(),
            c.base()
        );
    }
    // Another ABI's CCAs export into maps this build cannot see.
    rttfair_loader::installed::check(fs)?;
    let sockets = native
        .then(rttfair_loader::sockets::SocketReader::open)
        .transpose()?;
    // With --native, nothing of rttfair's loaded is not an error: the
    // kernel-CCA connections are still worth showing.
    let reader = match FlowReader::open(fs) {
        Ok(r) => Some(r),
        Err(rttfair_loader::Error::NothingLoaded { .. }) if native => None,
        Err(e) => return Err(e.into()),
    };
    loop {
        let mut flows = match &reader {
            Some(r) => r.flows()?,
            None => Vec::new(),
        };
        if let Some(c) = filter {
            flows.retain(|f| f.cca == Some(c));
        }
        let natives: Option<Vec<view::NativeRow>> = match &sockets {
            Some(r) => Some(r.read()?.iter().map(view::NativeRow::from).collect()),
            None => None,
        };
        let rows: Vec<_> = flows.iter().map(view::FlowRow::from).collect();
        if out.json {
            match natives {
                // With --native: {"rttfair": [...], "native": [...]}.
                Some(n) => println!("{}", serde_json::json!({ "rttfair": rows, "native": n })),
                None => println!("{}", serde_json::to_string(&rows)?),
            }
        } else {
            if watch.is_some() {
                print!("\x1b[2J\x1b[H");
            }
            print!("{}", view::flows_table(&flows));
            if let Some(n) = natives {
                println!();
                print!("{}", view::native_table(&n));
            }
        }
        match watch {
            Some(w) => std::thread::sleep(w),
            None => return Ok(()),
        }
    }
}

/// The global --bpffs (or RTTFAIR_BPFFS) overrides the config's bpffs when
/// it is not the default.
fn cli_bpffs_given(fs: &BpfFs) -> bool {
    fs.root() != std::path::Path::new(BpfFs::DEFAULT_ROOT)
}

#[cfg(test)]
mod tests {
    use rttfair_loader::migrate::Report;

    /// Matched connections left on the old CCA make `migrate` fail, all of
    /// them or some; the line says how many moved, how many did not and
    /// why. Only a full move is success (it used to exit 0 either way).
    #[test]
    fn a_migration_that_leaves_matched_connections_fails() {
        let all_failed = Report {
            moved: 0,
            failed: vec![(libc::ENOENT, 3)],
        };
        let e = super::migrate_outcome(&all_failed, "fairtt", "cubic").unwrap_err();
        assert_eq!(
            e.to_string(),
            "moved 0 connection(s) from fairtt to cubic; 3 matched but could not be moved: \
             No such file or directory (os error 2) (3)"
        );
        let some = Report {
            moved: 2,
            failed: vec![(libc::EPERM, 1), (libc::EBUSY, 2)],
        };
        let e = super::migrate_outcome(&some, "fairtt", "cubic").unwrap_err();
        assert!(e.to_string().starts_with("moved 2 connection(s)"), "{e}");
        assert!(
            e.to_string().contains("; 3 matched but could not be moved"),
            "{e}"
        );
        let done = Report {
            moved: 2,
            failed: vec![],
        };
        assert_eq!(
            super::migrate_outcome(&done, "fairtt", "cubic").unwrap(),
            "moved 2 connection(s) from fairtt to cubic"
        );
    }
}
