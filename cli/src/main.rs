//! `rttfairctl`: the operator's command line for rttfair.
//!
//! Every command is a thin layer over a library crate (the loader, the lab,
//! the daemon): parsing and printing live here, behaviour does not.

mod commands;
mod demo;
mod doctor;
mod interrupt;
mod lab;
mod logging;
mod man;
mod view;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rttfair_loader::lifecycle::FLOWS_MAX;

/// RTT-fair congestion control for Linux, as eBPF.
///
/// Load a congestion control with `rttfairctl load fairtt`; any TCP socket can
/// then select it (sysctl net.ipv4.tcp_congestion_control, setsockopt
/// TCP_CONGESTION, `iperf3 -C fairtt`, `ip route ... congctl fairtt`). It stays
/// registered after this command exits, until `rttfairctl unload fairtt`.
#[derive(Debug, Parser)]
#[command(name = "rttfairctl", version, propagate_version = true)]
pub struct Cli {
    /// bpffs directory holding rttfair's pins.
    #[arg(
        long,
        global = true,
        env = "RTTFAIR_BPFFS",
        default_value = "/sys/fs/bpf/rttfair"
    )]
    bpffs: std::path::PathBuf,

    /// Print what the command reports as JSON on stdout (one value per
    /// command; one per refresh with `flows --watch`).
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Register congestion controls with the kernel (qfair, bbr3, bbr1, fairtt, adbbr, bbr_native; `list` shows them).
    Load {
        /// CCAs to load.
        #[arg(required = true, value_name = "CCA")]
        ccas: Vec<String>,
        /// Capacity of the per-flow export map (1024 to 1048576), if this
        /// load creates it; a map that exists keeps its size, which is said.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(
            i64::from(*FLOWS_MAX.start())..=i64::from(*FLOWS_MAX.end())
        ))]
        flows_max: Option<u32>,
        /// Load this BPF object instead of the built-in one (your own build of
        /// the CCA; it must define `<cca>_ops`). Only with a single CCA.
        #[arg(long, value_name = "PATH")]
        object: Option<std::path::PathBuf>,
        /// Register the CCA a second time under this name, with tunables of
        /// its own (`rttfairctl set qfair_b.drain_phase_ms 1000`): qfair
        /// only, named qfair_<suffix>. Only with a single CCA.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
    },
    /// Unregister congestion controls (refused while sockets use them).
    Unload {
        /// CCAs to unload.
        #[arg(required = true, value_name = "CCA")]
        ccas: Vec<String>,
        /// Unregister even if sockets still use it (they keep running on it).
        #[arg(long, conflicts_with = "migrate_to")]
        force: bool,
        /// First move the sockets using it to this CCA: in this network
        /// namespace and those in /run/netns (not a container runtime's or
        /// an unshared one; refused before anything moves if sockets are there).
        #[arg(long, value_name = "CCA")]
        migrate_to: Option<String>,
    },
    /// Replace a loaded CCA's programs in place (same name, no gap): new
    /// sockets get the new build, open ones keep the old until migrated.
    Swap {
        /// The loaded CCA to replace.
        cca: String,
        /// The new build (default: the one embedded in this rttfairctl).
        #[arg(long, value_name = "PATH")]
        object: Option<std::path::PathBuf>,
    },
    /// Move open connections from one CCA to another without dropping them.
    Migrate {
        /// The CCA the connections use now.
        #[arg(long)]
        from: String,
        /// The CCA to move them to (any registered one).
        #[arg(long)]
        to: String,
        /// Only this network namespace (a name from `ip netns`); default: the
        /// current one and every named one.
        #[arg(long)]
        netns: Option<String>,
        /// Only connections to this IPv4 prefix, e.g. 10.0.0.0/8.
        #[arg(long)]
        dst: Option<String>,
        /// Only connections with this local or remote port.
        #[arg(long)]
        port: Option<u16>,
    },
    /// Set the default CCA for new sockets (net.ipv4.tcp_congestion_control).
    Default {
        /// Any registered congestion control (rttfair's or the kernel's).
        cca: String,
        /// In this network namespace instead of the current one.
        #[arg(long)]
        netns: Option<String>,
    },
    /// Make a CCA the default for connections of one cgroup (v2).
    Attach {
        /// The cgroup's directory, e.g. /sys/fs/cgroup/web.slice.
        #[arg(long)]
        cgroup: std::path::PathBuf,
        /// The CCA its new connections get.
        cca: String,
    },
    /// Remove rttfair's default-CCA attachment from a cgroup.
    Detach {
        /// The cgroup's directory.
        #[arg(long)]
        cgroup: std::path::PathBuf,
    },
    /// Show the CCAs of this build, which are loaded, the kernel default, and
    /// how many sockets use each.
    List,
    /// Set a runtime tunable, e.g. `set fairtt.beta 0.7` (applies within one
    /// round trip to every flow, no reload). The CCA must be loaded; its
    /// values go back to the defaults when it is unloaded.
    Set {
        /// <cca>.<tunable>
        name: String,
        /// The new value, in the tunable's unit (`rttfairctl get` shows it).
        #[arg(allow_negative_numbers = true)]
        value: String,
    },
    /// Show tunables: all of the loaded CCAs, one CCA's, or one.
    Get {
        /// <cca> or <cca>.<tunable>
        name: Option<String>,
    },
    /// Per-flow BBR estimates of every socket on a rttfair CCA (what `ss -ti`
    /// cannot show for BPF congestion controls).
    Flows {
        /// Refresh every N seconds (0.1 to 3600) until interrupted.
        #[arg(long, value_name = "SECS", value_parser = watch_interval)]
        watch: Option<std::time::Duration>,
        /// Only flows of this CCA.
        #[arg(long, value_name = "CCA")]
        cca: Option<String>,
        /// Also list this network namespace's connections on kernel CCAs
        /// (cubic, native bbr, reno), read with a BPF socket iterator.
        #[arg(long, conflicts_with = "cca")]
        native: bool,
    },
    /// Experiments on an emulated dumbbell (real kernel TCP, per-flow RTTs,
    /// drop-tail buffer in BDP units).
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
    /// Serve live per-flow estimates and fairness to Prometheus (/metrics).
    Daemon {
        /// Config file (TOML); default /etc/rttfair/daemon.toml, defaults if absent.
        #[arg(long, short)]
        config: Option<std::path::PathBuf>,
        /// Override the config's listen address.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Only check the config (and read its peer_hash_key_file, as a start
        /// would): print what it asks for and the capabilities it needs, then
        /// exit (0 if valid). Touches nothing.
        #[arg(long)]
        check_config: bool,
    },
    /// The guided tour: real flows through an emulated bottleneck with native
    /// and rttfair CCAs side by side. Leaves the host as it found it.
    Demo {
        /// Seconds per CCA, 5 to 600 (default: the scenario's 40).
        // A negative value reaches the range check and its one line
        // (clap would take `-5` for a flag and advise `-- -5`, which fails).
        #[arg(long, allow_negative_numbers = true)]
        seconds: Option<f64>,
        /// Leave the CCAs the demo loaded registered afterwards.
        #[arg(long)]
        keep_loaded: bool,
        /// The same two flows behind FQ-CoDel (RFC 8290's defaults, 64
        /// flow queues, ECN off) instead of the drop-tail buffer, with each
        /// flow's drops and sojourn.
        #[arg(long)]
        aqm: bool,
        /// Where the results and plots go.
        #[arg(long, default_value = "lab-out/demo")]
        out: std::path::PathBuf,
    },
    /// Check that this host can run rttfair: kernel features (read in its
    /// BTF), BTF, bpffs, capabilities, the lab's tools. One line per check,
    /// `ok` or `missing: what and how to fix it`; exits 1 if a check the
    /// asked-for use needs fails.
    Doctor {
        /// Only what this use needs (default: everything).
        #[arg(long = "for", value_enum, value_name = "USE")]
        for_use: Option<doctor::Use>,
    },
    /// Print a shell completion script, e.g.
    /// `rttfairctl completions bash > /etc/bash_completion.d/rttfairctl`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (rttfairctl.1 and one per subcommand) to a folder.
    #[command(hide = true)]
    Man {
        /// Where the pages go (created if missing).
        dir: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Run a scenario (a TOML file, or the name of an embedded one).
    Run {
        /// A scenario TOML file, or an embedded scenario's name.
        scenario: String,
        /// Give every flow this congestion control.
        #[arg(long)]
        cca: Option<String>,
        #[command(flatten)]
        common: LabArgs,
    },
    /// Run one scenario once per CCA and print the results side by side.
    ///
    /// A row per CCA. With several repetitions (`--reps`), Jain's index and
    /// utilization are the mean with the worst repetition in brackets; for
    /// a scenario with a late joiner or an RTT change, a last column gives
    /// each repetition's time to fair. `--json` adds each repetition's
    /// summary (`reps`) and the worst of them (`worst`).
    Compare {
        /// A scenario TOML file, or an embedded scenario's name.
        scenario: String,
        /// Comma-separated CCAs, e.g. bbr,bbr1,fairtt.
        #[arg(long, value_delimiter = ',', required = true)]
        cca: Vec<String>,
        #[command(flatten)]
        common: LabArgs,
    },
    /// Run a scenario's [sweep] grid for each CCA: CSV, line plots or heatmaps.
    Sweep {
        /// A scenario TOML file with a [sweep] table, or an embedded one's name.
        scenario: String,
        /// Comma-separated CCAs, e.g. bbr,fairtt.
        #[arg(long, value_delimiter = ',', required = true)]
        cca: Vec<String>,
        /// Run only shard I of N (0-based): the points whose position in
        /// the grid is I modulo N, each with all its repetitions.
        /// (Parsed by the command, so a bad spec is one line like every
        /// other error.)
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        /// Continue an interrupted sweep in the same --out: points whose
        /// run folder holds a complete result of the same scenario made by
        /// this build under the tunables the CCAs have now are kept, the
        /// others run.
        #[arg(long)]
        resume: bool,
        /// Run nothing: print the points, the machine-hours they take and,
        /// with --shard I/N, every shard's share.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        common: LabArgs,
    },
    /// Join sweep folders of one grid: the shards of a sweep, or sweeps
    /// of the same grid for different CCAs, side by side.
    ///
    /// Shards of one sweep give the folder one machine would have written.
    /// Sweeps of other CCAs may come from other builds and repetition
    /// counts (`lab sweep --reps`): each CCA's build (commit, BPF object
    /// SHA-256) and repetitions are printed as one note line and kept in
    /// provenance.json (`sources`). Refused, in one line and before
    /// anything is written: folders whose scenarios differ other than in
    /// the repetition count ("mixed scenarios"); one CCA's folders made by
    /// different builds ("mixed binaries") or with different repetition
    /// counts ("mixed repetitions"), or whose points ran under different
    /// tunables ("mixed tunables"); a CCA with a grid point in no folder
    /// ("missing points") or in two ("duplicate point"). The CCAs keep the
    /// order in which they first appear in the folders given, so the
    /// first folder's CCAs are the first columns. Prints (and writes to
    /// compare.md) per metric a table with a row per grid point and a
    /// column per CCA, and each CCA's lowest Jain's index per x value and
    /// over the points with x at least each value.
    Merge {
        /// Sweep folders (shards, or whole sweeps of other CCAs): each a
        /// sweep folder or the --out holding one.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<std::path::PathBuf>,
        /// Where the merged `<scenario>-sweep` folder is created.
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
    },
    /// Print run folders of one scenario side by side: one Markdown table,
    /// a row per CCA (and per setting of the scenario's tunables),
    /// repetitions pooled over the folders.
    ///
    /// The folders are what `lab run` and `lab compare` write (scenario.toml,
    /// summary.json, rep<N>/); the same CCA's folders from several
    /// invocations (e.g. two `--out`s) pool their repetitions. Per CCA:
    /// each group's mean goodput, Jain's index and utilization as mean
    /// (worst repetition in brackets, with several), mean queueing delay and
    /// retransmissions, each repetition's time to fair when the scenario
    /// has a late joiner or an RTT change (recomputed from goodput.csv for
    /// folders written before summaries held it), and the repetitions.
    /// Refused, in one line: a folder without summary.json (unfinished),
    /// folders whose scenarios differ other than in repetitions and CCAs
    /// ("different scenarios"), a folder given twice. Writes nothing.
    Table {
        /// Run folders (`<out>/<scenario>-<cca>`), e.g. rep1/qfair-loss-*
        /// rep2/qfair-loss-*.
        #[arg(required = true, value_name = "RUN_DIR")]
        dirs: Vec<std::path::PathBuf>,
    },
    /// Compute the summaries of stored run or sweep folders again from
    /// their files, with this build's definitions, in place.
    ///
    /// A run folder (what `lab run`/`compare` write): each repetition's
    /// summary.json and the run's. A sweep or merge folder: each point's
    /// run folder, then sweep.csv, sweep.json, compare.md and the plots
    /// (provenance.json kept). Goodput, utilization and Jain are taken as
    /// stored (the arrival records are not kept); every other figure is
    /// recomputed over the stored window. Figures whose inputs the folder
    /// lacks (per-interval retransmissions, the random-loss counter at the
    /// window's edges: folders from before session 16) are written as
    /// null and named on a note line. Refused, in one line and before
    /// anything is written: a folder missing scenario.toml, summary.json,
    /// a repetition's queue.csv, or a marked window.
    Resummarize {
        /// Run folders and sweep (or merge) folders.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<std::path::PathBuf>,
        /// Compute everything, write nothing: say what would be done or
        /// why the folders would be refused.
        #[arg(long)]
        check: bool,
    },
    /// List the embedded scenarios.
    Scenarios,
}

#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Parent folder of the results.
    #[arg(long, default_value = "lab-out")]
    pub out: std::path::PathBuf,
    /// Override the scenario's duration (seconds).
    // As `demo --seconds`: a negative value gets the range check's line.
    #[arg(long, allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// Override the scenario's repetitions.
    #[arg(long)]
    pub reps: Option<u32>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The refresh interval of `flows --watch`: seconds between 0.1 (faster
/// only redraws the same table) and an hour (longer is no watch, and
/// `Duration` cannot hold every float anyway).
fn watch_interval(arg: &str) -> Result<std::time::Duration, String> {
    const RANGE: std::ops::RangeInclusive<f64> = 0.1..=3600.0;
    let secs: f64 = arg
        .parse()
        .map_err(|_| "not a number of seconds".to_string())?;
    if !RANGE.contains(&secs) {
        return Err(format!(
            "must be between {} and {} seconds",
            RANGE.start(),
            RANGE.end()
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    logging::init();
    if prints_only(&cli.command) {
        die_quietly_on_closed_stdout();
    }
    let result = commands::run(cli);
    // A signal the lab's watcher caught is ending the process: it removes
    // the namespaces (so whatever ran in them just failed, which is not
    // this command's error), ends the CCA leases and says so in one line.
    // Returning now would exit while it still unloads.
    rttfair_lab::net::netns::await_signal_exit(std::time::Duration::from_secs(30));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rttfairctl: error: {}", one_line(&e));
            match e.downcast_ref::<interrupt::Interrupted>() {
                Some(i) => ExitCode::from(i.exit_code()),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// A command line clap refused. Help and version (`--help`, `help`,
/// `--version`, and a command given without its subcommand) print as clap
/// prints them; every other refusal is one line like any other error, with
/// clap's usage exit code (2).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            eprintln!("rttfairctl: error: {}", usage_line(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// Clap's message on one line: its first paragraph (the error, with the
/// names it lists on the lines below, e.g. the missing arguments or the
/// possible values) and its tips, without the usage and "try --help"
/// lines and without clap's own "error: " prefix.
fn usage_line(message: &str) -> String {
    let mut lines = message.lines().map(str::trim);
    let first: Vec<&str> = lines.by_ref().take_while(|l| !l.is_empty()).collect();
    let first = first.join(" ");
    let mut parts = vec![first.strip_prefix("error: ").unwrap_or(&first)];
    parts.extend(lines.filter(|l| l.starts_with("tip:")));
    parts.join("; ")
}

/// Commands whose only output is what they print, so that `rttfairctl
/// flows | head` may end them. The daemon, the lab and the demo keep Rust's
/// ignored SIGPIPE: they own sockets and child processes that must be
/// cleaned up, not cut off.
fn prints_only(c: &Command) -> bool {
    match c {
        Command::Lab { command } => {
            matches!(command, LabCommand::Scenarios | LabCommand::Table { .. })
        }
        Command::Daemon { .. } | Command::Demo { .. } => false,
        _ => true,
    }
}

/// The default SIGPIPE action (end the process quietly, as `cat` does)
/// instead of Rust's, where a closed pipe makes `println!` panic.
fn die_quietly_on_closed_stdout() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called once at start-up before any thread exists; SIG_DFL
    // installs no handler code.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
    }
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    /// `load --flows-max` takes exactly the loader's range, the one the
    /// daemon's `flow_map_entries` is checked against too.
    #[test]
    fn flows_max_is_the_loaders_range() {
        use super::FLOWS_MAX;
        let parses = |n: u64| {
            super::Cli::try_parse_from([
                "rttfairctl",
                "load",
                "bbr1",
                "--flows-max",
                &n.to_string(),
            ])
            .is_ok()
        };
        let (lo, hi) = (u64::from(*FLOWS_MAX.start()), u64::from(*FLOWS_MAX.end()));
        assert!(parses(lo) && parses(hi));
        assert!(!parses(lo - 1) && !parses(hi + 1));
        let daemon =
            |n: u64| rttfair_daemon::Config::parse(&format!("flow_map_entries = {n}")).is_ok();
        assert!(daemon(lo) && daemon(hi));
        assert!(!daemon(lo - 1) && !daemon(hi + 1));
    }

    /// Clap's refusal of `args` as `main` prints it.
    fn refusal(args: &[&str]) -> String {
        let e =
            super::Cli::try_parse_from(std::iter::once("rttfairctl").chain(args.iter().copied()))
                .expect_err("refused");
        super::usage_line(&e.to_string())
    }

    /// A negative `--duration` or `demo --seconds` is a value for the
    /// range check to refuse in its own line, not a flag clap refuses with
    /// a tip (`-- -5`) that fails again.
    #[test]
    fn a_negative_duration_reaches_the_range_check() {
        let parse = |args: &[&str]| {
            super::Cli::try_parse_from(std::iter::once("rttfairctl").chain(args.iter().copied()))
        };
        match parse(&["lab", "run", "x", "--duration", "-5"])
            .unwrap()
            .command
        {
            super::Command::Lab {
                command: super::LabCommand::Run { common, .. },
            } => assert_eq!(common.duration, Some(-5.0)),
            c => panic!("{c:?}"),
        }
        match parse(&["demo", "--seconds", "-5"]).unwrap().command {
            super::Command::Demo { seconds, .. } => assert_eq!(seconds, Some(-5.0)),
            c => panic!("{c:?}"),
        }
    }

    /// A refused command line is one line that keeps what clap says is
    /// wrong (the names it lists below its first line, its tip) and drops
    /// the usage and the "error: " prefix that `main` writes itself.
    #[test]
    fn a_refused_command_line_is_one_line_naming_the_problem() {
        let cases: [(&[&str], &str); 5] = [
            (
                &["lod"],
                "unrecognized subcommand 'lod'; tip: a similar subcommand exists: 'load'",
            ),
            (
                &["load"],
                "the following required arguments were not provided: <CCA>...",
            ),
            (
                &["flows", "--watch", "abc"],
                "invalid value 'abc' for '--watch <SECS>'",
            ),
            (
                &["unload", "x", "--force", "--migrate-to", "y"],
                "the argument '--force' cannot be used with '--migrate-to <CCA>'",
            ),
            (
                &["completions", "nosh"],
                "[possible values: bash, elvish, fish, powershell, zsh]",
            ),
        ];
        for (args, expected) in cases {
            let line = refusal(args);
            assert!(line.contains(expected), "{args:?}: {line}");
            assert!(
                !line.contains('\n') && !line.starts_with("error"),
                "{args:?}: {line}"
            );
            assert!(
                !line.contains("Usage") && !line.contains("--help"),
                "{args:?}: {line}"
            );
        }
    }

    /// `flows --watch` takes 0.1 to 3600 seconds; anything else (a huge
    /// number that no `Duration` holds, NaN, too fast) is refused while
    /// parsing, before anything is read.
    #[test]
    fn watch_interval_is_bounded() {
        use std::time::Duration;
        assert_eq!(super::watch_interval("0.1"), Ok(Duration::from_millis(100)));
        assert_eq!(super::watch_interval("3600"), Ok(Duration::from_secs(3600)));
        for bad in ["0.09", "3600.5", "1e20", "NaN", "inf", "-1", "abc"] {
            assert!(super::watch_interval(bad).is_err(), "{bad} accepted");
        }
        let line = refusal(&["flows", "--watch", "1e20"]);
        assert!(
            line.contains("must be between 0.1 and 3600 seconds"),
            "{line}"
        );
    }

    /// Every argument of every (sub)command says what it is for.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id != "help" && id != "version" && a.get_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {} (command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&cmd, "rttfairctl", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:?}");
    }

    /// `load --help` names every CCA this build can load (the list is
    /// prose in a doc comment, so a new CCA must not be left out of it).
    #[test]
    fn load_help_names_every_cca() {
        let cmd = super::Cli::command();
        let load = cmd.find_subcommand("load").expect("load command");
        let about = load.get_about().expect("load has help").to_string();
        for cca in rttfair_loader::Cca::ALL {
            assert!(
                about.contains(cca.name()),
                "`load` help omits {}: {about}",
                cca.name()
            );
        }
    }
}
