//! Dispatch of the subcommands to the library crates.

use std::time::Duration;

use std::path::Path;

use anyhow::{bail, Context, Result};
use rttfair_loader::lifecycle::{self, LoadOptions, LoadOutcome};
use rttfair_loader::{flows::FlowReader, BpfFs, Cca};

use crate::view;
use crate::{Cli, Command};

pub fn run(cli: Cli) -> Result<()> {
    let fs = BpfFs::new(&cli.bpffs);
    match cli.command {
        Command::Load { ccas, flows_max, object } => load(&fs, &ccas, flows_max, object.as_deref()),
        Command::Unload { ccas, force } => unload(&fs, &ccas, force),
        Command::List { json } => list(&fs, json),
        Command::Flows { json, watch, cca } => flows(&fs, json, watch, cca.as_deref()),
        Command::Set { name, value } => {
            let v = rttfair_loader::tunables::set(&fs, &name, &value)?;
            println!("{} = {}{}", v.name, v.value, v.unit);
            Ok(())
        }
        Command::Get { name, json } => {
            let values = rttfair_loader::tunables::get(&fs, name.as_deref())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&values)?);
            } else {
                print!("{}", view::tunables_table(&values));
            }
            Ok(())
        }
        Command::Daemon { config, listen } => {
            let mut c = rttfair_daemon::Config::load(config.as_deref())?;
            if let Some(l) = listen {
                c.listen = l;
            }
            if std::env::var_os("RTTFAIR_BPFFS").is_some() || cli_bpffs_given(&fs) {
                c.bpffs = fs.root().to_path_buf();
            }
            rttfair_daemon::run(c)
        }
        Command::Lab { command } => crate::lab::run(&fs, command),
        Command::Demo { seconds, keep_loaded } => {
            if !(seconds.is_finite() && (1.0..=600.0).contains(&seconds)) {
                bail!("--seconds must be between 1 and 600, got {seconds}");
            }
            rttfair_lab::demo::run(&fs, &rttfair_lab::demo::DemoOptions { seconds, keep_loaded })
        }
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

fn load(fs: &BpfFs, names: &[String], flows_max: Option<u32>, object: Option<&Path>) -> Result<()> {
    let ccas = parse_ccas(names)?;
    let object = match object {
        None => None,
        Some(_) if ccas.len() != 1 => bail!("--object takes exactly one CCA"),
        Some(p) => Some(std::fs::read(p).with_context(|| format!("read {}", p.display()))?),
    };
    let opts = LoadOptions { flows_max, object };
    let mut done = Vec::new();
    for cca in &ccas {
        match lifecycle::load(*cca, fs, &opts) {
            Ok(outcome) => {
                let what = match outcome {
                    LoadOutcome::Loaded => "loaded",
                    LoadOutcome::AlreadyLoaded => "already loaded",
                    LoadOutcome::Repaired => "loaded (repaired a stale pin from an interrupted run)",
                };
                println!("{cca}: {what}");
                if outcome != LoadOutcome::AlreadyLoaded {
                    done.push(*cca);
                }
            }
            Err(e) => {
                // All or nothing: undo what this invocation registered.
                for c in done {
                    let _ = lifecycle::unregister(c, fs, true);
                }
                return Err(e.into());
            }
        }
    }
    Ok(())
}

fn unload(fs: &BpfFs, names: &[String], force: bool) -> Result<()> {
    let ccas = parse_ccas(names)?;
    // Check all before changing any.
    for cca in &ccas {
        if !fs.link_pin(*cca).exists() {
            lifecycle::unregister(*cca, fs, force)?; // reports the precise error
        }
        if !force {
            let n = rttfair_loader::flows::live_sockets(fs, *cca).unwrap_or(0);
            if n > 0 {
                return Err(rttfair_loader::Error::InUse { cca: cca.to_string(), sockets: n }.into());
            }
        }
    }
    for cca in ccas {
        lifecycle::unregister(cca, fs, force)?;
        println!("{cca}: unloaded");
    }
    Ok(())
}

fn list(fs: &BpfFs, json: bool) -> Result<()> {
    let status = view::Status::gather(fs)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        print!("{}", status.table());
    }
    Ok(())
}

fn flows(fs: &BpfFs, json: bool, watch: Option<f64>, cca: Option<&str>) -> Result<()> {
    let filter = cca.map(str::parse::<Cca>).transpose()?;
    if let Some(w) = watch {
        if !(w.is_finite() && w >= 0.1) {
            bail!("--watch must be a number of seconds >= 0.1, got {w}");
        }
    }
    let reader = FlowReader::open(fs)?;
    loop {
        let mut flows = reader.flows()?;
        if let Some(c) = filter {
            flows.retain(|f| f.cca() == Some(c));
        }
        if json {
            let rows: Vec<_> = flows.iter().map(view::FlowRow::from).collect();
            println!("{}", serde_json::to_string(&rows)?);
        } else {
            if watch.is_some() {
                print!("\x1b[2J\x1b[H");
            }
            print!("{}", view::flows_table(&flows));
        }
        match watch {
            Some(w) => std::thread::sleep(Duration::from_secs_f64(w)),
            None => return Ok(()),
        }
    }
}

/// The global --bpffs (or RTTFAIR_BPFFS) overrides the config's bpffs when
/// it is not the default.
fn cli_bpffs_given(fs: &BpfFs) -> bool {
    fs.root() != std::path::Path::new(BpfFs::DEFAULT_ROOT)
}
