//! Making sure the CCAs an experiment names are registered, and leaving the
//! host as it was found.
//!
//! Several labs may run at once against one installation (a sweep in one
//! terminal, a quick `lab run` in another). A project CCA a lab had to load
//! is therefore not simply unloaded by whoever loaded it: every session that
//! uses it holds a shared *lease* (a flock on a file under
//! `/run/rttfair/lab-leases/`), and a session that ends unloads it only if
//! it can then take the lease exclusively (no other lab is using it) and a
//! lab, not the operator, loaded it (a marker file next to the lease). The
//! kernel drops the flocks of a killed lab; its marker stays, so the next
//! lab to finish cleans up what it left registered. Beside the marker, a
//! lab records the object it loaded and the scenario tunables it set, so a
//! lab that finds the CCA registered knows what it runs, and runs it only
//! with the same tunables. Those files, and the operator's taking a CCA
//! over, are the loader's ([`rttfair_loader::lease`]), shared with the
//! daemon and `rttfairctl load`.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};
use rttfair_loader::lease::{lease_dir, lease_path, marker, object_record, tunables_record};
use rttfair_loader::lifecycle::{self, LoadOptions};
use rttfair_loader::{kernel, BpfFs, Cca};

use crate::results::provenance::CcaObject;
use crate::scenario::tunables::{self, Tunables};

/// One session's shared hold on one project CCA.
struct Lease {
    session: u64,
    fs: BpfFs,
    cca: Cca,
    lock: Flock<File>,
}

/// Every live lease of this process, so the Ctrl-C hook can end them too.
static LEASES: Mutex<Vec<Lease>> = Mutex::new(Vec::new());
/// Held while a session takes a lease and loads its CCA, and by the signal
/// hook before it ends the leases: a signal that lands mid-load waits for
/// the load to finish (or fail) and then unloads it, instead of finding it
/// not yet registered while the load goes on to register it as the
/// process exits (measured: a SIGTERM to `demo` left its CCAs registered).
static LOADING: Mutex<()> = Mutex::new(());
static NEXT_SESSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// CCAs registered for the duration of an experiment.
pub struct CcaSession {
    fs: BpfFs,
    id: u64,
    keep: bool,
    shared: Vec<Cca>,
    /// What each CCA of the session runs (see [`CcaSession::objects`]).
    objects: Vec<CcaObject>,
    /// The CCAs whose every tunable is known: a lab loaded them with the
    /// scenario's (see [`CcaSession::expected_tunables`]).
    known: Vec<Cca>,
}

/// fairtt.scope as the lab sets it on a fairtt it loads: its sender
/// namespaces stand for separate hosts, so Wfcount per namespace.
const LAB_FAIRTT_SCOPE: f64 = 2.0;

/// What provenance records as the object of a CCA registered before the
/// lab and not by a lab (the operator's `load`, `--object`, `swap`, a
/// daemon of another build): which object that is cannot be told (the
/// kernel keeps the translated programs, not the object file), so
/// `--resume` reruns and `lab merge` refuses its points.
pub const UNKNOWN_OBJECT: &str = "unknown";

/// The object a registered `cca` runs, as far as a lab can tell: the one
/// recorded by the lab that loaded it if a lab did (its marker is there:
/// nobody adopted it since), else [`UNKNOWN_OBJECT`].
fn registered_object(fs: &BpfFs, cca: Cca) -> String {
    let recorded = marker(fs, cca)
        .exists()
        .then(|| std::fs::read_to_string(object_record(fs, cca)).ok())
        .flatten()
        .map(|s| s.trim().to_string())
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    recorded.unwrap_or_else(|| UNKNOWN_OBJECT.to_string())
}

/// The scenario tunables a registered `cca` was loaded with, as far as a
/// lab can tell: the ones the lab that loaded it recorded while its marker
/// is there, else `None` (registered outside the lab, or adopted since:
/// unknown, and provenance records them as read back).
fn registered_tunables(fs: &BpfFs, cca: Cca) -> Option<Tunables> {
    marker(fs, cca)
        .exists()
        .then(|| std::fs::read_to_string(tunables_record(fs, cca)).ok())
        .flatten()
        .and_then(|text| toml::from_str(&text).ok())
}

/// Whether another holder has a lease on `path` right now (a probe with a
/// second, exclusive, non-blocking flock that is released at once).
fn leased_by_another(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err()
}

/// Take a shared lease on `cca`, waiting while another lab is unloading it.
/// Also says whether another process held a lease on it at that moment (a
/// first lease of this process only: its own leases hide others).
fn take_lease(fs: &BpfFs, cca: Cca, session: u64) -> Result<(Lease, bool)> {
    let dir = lease_dir(fs);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let path = lease_path(fs, cca);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    let held_here = LEASES
        .lock()
        .map(|l| l.iter().any(|x| x.cca == cca && x.fs.root() == fs.root()))
        .unwrap_or(false);
    let other = !held_here && leased_by_another(&path);
    let lock = Flock::lock(file, FlockArg::LockShared)
        .map_err(|(_, e)| anyhow::anyhow!("lock {}: {e}", path.display()))?;
    Ok((
        Lease {
            session,
            fs: fs.clone(),
            cca,
            lock,
        },
        other,
    ))
}

/// End a lease: unload the CCA if no other lab holds it and a lab loaded it.
fn end_lease(lease: Lease) {
    if lease.lock.relock(FlockArg::LockExclusiveNonblock).is_err() {
        return; // another lab still uses it; the last one out cleans up
    }
    let m = marker(&lease.fs, lease.cca);
    if m.exists() {
        if lifecycle::is_loaded(lease.cca, &lease.fs) {
            let _ = lifecycle::unregister(lease.cca, &lease.fs, true);
        }
        let _ = std::fs::remove_file(&m);
        let _ = std::fs::remove_file(object_record(&lease.fs, lease.cca));
        let _ = std::fs::remove_file(tunables_record(&lease.fs, lease.cca));
    }
    // Dropping the Flock unlocks.
}

/// Whether every one of `names` can run in an experiment, as
/// [`CcaSession::ensure`] decides: one of rttfair's CCAs (loaded on demand)
/// or one the kernel has available. Reads only the kernel's list, so a
/// command that runs many experiments (`lab compare`, `lab sweep`, also
/// with `--dry-run`) calls it once before the first, instead of finding an
/// unavailable CCA when its turn comes, hours later.
pub fn check_available(names: &[String]) -> Result<()> {
    // A CCA named twice would run every point twice into one folder.
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            anyhow::bail!("--cca: '{name}' named twice");
        }
    }
    for name in names {
        if name.parse::<Cca>().is_err() && !kernel::is_registered(name)? {
            anyhow::bail!(
                "congestion control '{name}' is neither one of rttfair's ({}) nor available in the kernel ({})",
                Cca::valid_names(),
                kernel::available_ccas()?.join(" ")
            );
        }
    }
    Ok(())
}

/// Why a lab whose scenario sets `wanted` (its tunables of `cca`) may not
/// run `cca`, found registered, set up with `recorded` (the scenario
/// tunables the lab that loaded it set, `None` unknown), or `None` if it
/// may: tunables are host-wide per CCA, so the lab runs it only as the
/// same ones leave it. A CCA registered outside the lab runs as it is
/// with none wanted; setting some would change the flows of whoever else
/// runs it. `shared`: another lab holds a lease on it.
fn join_refusal(
    cca: Cca,
    wanted: &Tunables,
    recorded: Option<&Tunables>,
    shared: bool,
) -> Option<anyhow::Error> {
    let whose = if shared {
        "another lab is running it"
    } else {
        "it was registered before this lab"
    };
    let why = match recorded {
        Some(r) if r == wanted => return None,
        None if wanted.is_empty() => return None,
        Some(r) if wanted.is_empty() => format!(
            "the scenario sets no {cca} tunables, but {cca} is already registered by a lab that set {} and tunables are host-wide per CCA: this run's {cca} flows would run under them while its scenario.toml says nothing",
            tunables::listed(r)
        ),
        _ => format!(
            "the scenario sets {}, but {cca} is already registered ({whose}){} and tunables are host-wide per CCA: setting them would change the other user's {cca} flows too",
            tunables::listed(wanted),
            match recorded {
                Some(r) if r.is_empty() => " with its defaults".to_string(),
                Some(r) => format!(" with {}", tunables::listed(r)),
                None => String::new(),
            }
        ),
    };
    Some(anyhow::anyhow!(
        "{why}; nothing was run (`rttfairctl unload {cca}` first, or wait for the other lab)"
    ))
}

/// [`join_refusal`] for `cca` at `fs` if it is registered: the error, or
/// whether its tunables are known (a lab loaded it with `wanted`).
fn check_join(fs: &BpfFs, cca: Cca, wanted: &Tunables, shared: bool) -> Result<bool> {
    let recorded = registered_tunables(fs, cca);
    match join_refusal(cca, wanted, recorded.as_ref(), shared) {
        Some(e) => Err(e),
        None => Ok(recorded.is_some()),
    }
}

impl CcaSession {
    /// Ensure every project CCA among `names` is registered. Native names
    /// (cubic, bbr, reno) must already be available. Uses the installation
    /// at `fs`; CCAs already loaded there are used as they are.
    pub fn ensure(fs: &BpfFs, names: &[String]) -> Result<CcaSession> {
        Self::ensure_tuned(fs, names, &Tunables::new())
    }

    /// As [`CcaSession::ensure`], and set `tunables` (a scenario's, each
    /// of a CCA among `names`) on each CCA this session loads, after the
    /// lab's own settings (fairtt.scope), so the scenario's win, and record
    /// them beside its marker. A CCA found registered is refused unless a
    /// lab loaded it with the same tunables, or none are wanted and it was
    /// registered outside the lab (they are host-wide per CCA: another
    /// user's flows would change too, or this run's would run under
    /// another scenario's). Every CCA already registered is checked
    /// before anything is loaded, and notes are printed only once all
    /// passed, so a refusal is one line and leaves nothing loaded; on any
    /// later error what this session loaded is unloaded again (its leases
    /// end as it drops).
    pub fn ensure_tuned(fs: &BpfFs, names: &[String], tunables: &Tunables) -> Result<CcaSession> {
        check_available(names)?;
        crate::net::netns::on_signal_exit(end_all_leases);
        let mut s = CcaSession {
            fs: fs.clone(),
            id: NEXT_SESSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            keep: false,
            shared: Vec::new(),
            objects: Vec::new(),
            known: Vec::new(),
        };
        let ccas: Vec<(&String, Cca)> = names
            .iter()
            .filter_map(|n| n.parse::<Cca>().ok().map(|c| (n, c)))
            .collect();
        // The leases first, each CCA registered (under its lease, so no lab
        // can unload it between this check and the experiment) checked
        // before any is loaded: a refusal leaves nothing loaded.
        for &(name, cca) in &ccas {
            let _loading = LOADING.lock().unwrap_or_else(|e| e.into_inner());
            if LEASES
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.session == s.id && l.cca == cca)
            {
                continue; // named twice
            }
            let (lease, other) = take_lease(fs, cca, s.id)?;
            if other {
                s.shared.push(cca);
            }
            LEASES.lock().unwrap().push(lease);
            if lifecycle::is_loaded(cca, fs) {
                check_join(fs, cca, &tunables::of_cca(tunables, name), other)?;
            }
        }
        let mut notes = Vec::new();
        for &(name, cca) in &ccas {
            if s.objects.iter().any(|o| &o.name == name) {
                continue; // named twice
            }
            let _loading = LOADING.lock().unwrap_or_else(|e| e.into_inner());
            let mine = CcaObject::of(name);
            let wanted = tunables::of_cca(tunables, name);
            if lifecycle::is_loaded(cca, fs) {
                // Again: another lab may have loaded it since the check.
                if check_join(fs, cca, &wanted, s.shared.contains(&cca))? {
                    s.known.push(cca);
                }
                let sha = registered_object(fs, cca);
                if sha == UNKNOWN_OBJECT {
                    notes.push(format!(
                        "note: {cca} was registered before this lab, not by a lab, so which object it runs is unknown; provenance records \"{UNKNOWN_OBJECT}\" (--resume reruns, lab merge refuses such points); `rttfairctl unload {cca}` first to run this build's"
                    ));
                }
                s.objects.push(CcaObject {
                    object_sha256: Some(sha),
                    ..mine
                });
            } else {
                // The marker and both records by one writer: a record is
                // either whole or as it was, never cut short by a signal.
                crate::atomic::write_file(&marker(fs, cca), std::process::id().to_string())?;
                crate::atomic::write_file(
                    &object_record(fs, cca),
                    mine.object_sha256.as_deref().unwrap_or_default(),
                )?;
                crate::atomic::write_file(
                    &tunables_record(fs, cca),
                    toml::to_string(&wanted).context("the scenario's tunables as TOML")?,
                )?;
                s.objects.push(mine);
                lifecycle::load(cca, fs, &LoadOptions::default())
                    .with_context(|| format!("load {cca}"))?;
                if cca == Cca::Fairtt {
                    // A fairtt the operator loaded keeps its own scope.
                    rttfair_loader::tunables::set(
                        fs,
                        "fairtt.scope",
                        &tunables::text(LAB_FAIRTT_SCOPE),
                    )
                    .context("set fairtt.scope for the lab")?;
                }
                for (name, v) in &wanted {
                    rttfair_loader::tunables::set(fs, name, &tunables::text(*v))
                        .with_context(|| format!("set the scenario's {name}"))?;
                }
                s.known.push(cca);
            }
        }
        // Notes only once every CCA passed, so a refusal is one line.
        // FaiRTT's Wfcount is host-wide by design: concurrent experiments
        // with it see each other's flows (measured: a run overlapping
        // another lab's for 75 s converged only when the other run's flows
        // ended).
        if s.shared.contains(&Cca::Fairtt) {
            eprintln!(
                "note: another lab is using fairtt at the same time; FaiRTT counts minRTT classes host-wide (Wfcount), so each experiment's flows change the other's results"
            );
        }
        for n in notes {
            eprintln!("{n}");
        }
        Ok(s)
    }

    /// What a lab loaded the CCAs of this session whose tunables are known
    /// with, tunable by tunable ("qfair.k_alpha" -> value): the scenario's
    /// `set`, else the lab's own (fairtt.scope), else the default. A CCA
    /// registered outside the lab has none here: provenance records its
    /// tunables as read back, whatever they are.
    pub fn expected_tunables(&self, set: &Tunables) -> Tunables {
        let mut out = Tunables::new();
        // A second name (qfair_b) has its base's tunables under its name.
        for &cca in &self.known {
            for t in rttfair_loader::tunables::ALL
                .iter()
                .filter(|t| t.cca == cca.base())
            {
                out.insert(format!("{cca}.{}", t.name), t.default);
            }
        }
        if self.known.contains(&Cca::Fairtt) {
            out.insert("fairtt.scope".to_string(), LAB_FAIRTT_SCOPE);
        }
        for (name, v) in set {
            if let Some(e) = out.get_mut(name) {
                *e = *v;
            }
        }
        out
    }

    /// What each of `names` runs, as provenance records it: a project CCA
    /// this session loaded, this build's object; one it found registered,
    /// the object the lab that loaded it recorded, or [`UNKNOWN_OBJECT`];
    /// a kernel CCA, no object.
    pub fn objects(&self, names: &[String]) -> Vec<CcaObject> {
        names
            .iter()
            .map(|n| {
                self.objects
                    .iter()
                    .find(|o| &o.name == n)
                    .cloned()
                    .unwrap_or_else(|| CcaObject::of(n))
            })
            .collect()
    }

    /// Project CCAs another process (another lab) was using when this
    /// session took its lease on them.
    pub fn shared_with_other_labs(&self) -> &[Cca] {
        &self.shared
    }

    /// Keep what this session loaded registered after it ends (the operator
    /// takes it over: no later lab will unload it).
    pub fn keep(&mut self) {
        self.keep = true;
    }

    pub fn fs(&self) -> &BpfFs {
        &self.fs
    }
}

impl Drop for CcaSession {
    fn drop(&mut self) {
        let mine: Vec<Lease> = {
            let Ok(mut all) = LEASES.lock() else { return };
            let (mine, rest) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|l| l.session == self.id);
            *all = rest;
            mine
        };
        for lease in mine {
            if self.keep {
                let _ = std::fs::remove_file(marker(&lease.fs, lease.cca));
            } else {
                end_lease(lease);
            }
        }
    }
}

fn end_all_leases() {
    // Never released: the process exits after the hooks, and no session
    // may start a load in between.
    std::mem::forget(LOADING.lock().unwrap_or_else(|e| e.into_inner()));
    let all = LEASES
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    for lease in all {
        end_lease(lease);
    }
}

#[cfg(test)]
mod tests {
    /// A registered CCA's object and tunables as a lab can tell them: the
    /// ones the lab that loaded it recorded while its marker is there;
    /// unknown without a record, or once the operator adopted it (marker
    /// gone).
    #[test]
    fn a_registered_object_is_known_only_from_the_lab_that_loaded_it() {
        use rttfair_loader::{BpfFs, Cca};
        let tmp = crate::testkit::temp_folder("ccas-object");
        let fs = BpfFs::new(tmp.path().join("bpffs"));
        let dir = super::lease_dir(&fs);
        std::fs::create_dir_all(&dir).unwrap();
        let cca = Cca::Qfair;
        assert_eq!(super::registered_object(&fs, cca), super::UNKNOWN_OBJECT);
        let sha = "ab".repeat(32);
        let set = super::Tunables::from([("qfair.exit_drains".to_string(), 2.0)]);
        std::fs::write(super::object_record(&fs, cca), &sha).unwrap();
        std::fs::write(
            super::tunables_record(&fs, cca),
            toml::to_string(&set).unwrap(),
        )
        .unwrap();
        let no_marker = super::registered_tunables(&fs, cca);
        std::fs::write(super::marker(&fs, cca), "1234").unwrap();
        let known = (
            super::registered_object(&fs, cca),
            super::registered_tunables(&fs, cca),
        );
        rttfair_loader::lease::adopt(&fs, cca).unwrap();
        let adopted = (
            super::registered_object(&fs, cca),
            super::registered_tunables(&fs, cca),
        );
        let left = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(no_marker, None);
        assert_eq!(known, (sha, Some(set)));
        assert_eq!(adopted, (super::UNKNOWN_OBJECT.to_string(), None));
        assert_eq!(left, 0, "adopt removes the marker and the records");
    }

    /// A registered CCA is joined only as the lab that loaded it set it up:
    /// the same tunables, whichever side sets some, or none wanted on one
    /// registered outside the lab (unknown). Every refusal is one line.
    #[test]
    fn a_registered_cca_is_joined_only_with_the_tunables_it_was_loaded_with() {
        use super::{join_refusal, Cca, Tunables};
        let none = Tunables::new();
        let two = Tunables::from([("qfair.exit_drains".to_string(), 2.0)]);
        let three = Tunables::from([("qfair.exit_drains".to_string(), 3.0)]);
        let refusal = |wanted: &Tunables, recorded: Option<&Tunables>| {
            join_refusal(Cca::Qfair, wanted, recorded, true).map(|e| e.to_string())
        };
        assert!(refusal(&none, None).is_none());
        assert!(refusal(&none, Some(&none)).is_none());
        assert!(refusal(&two, Some(&two)).is_none());
        let cases = [
            (&none, Some(&two), "the scenario sets no qfair tunables, but qfair is already registered by a lab that set qfair.exit_drains = 2 and"),
            (&two, Some(&none), "the scenario sets qfair.exit_drains = 2, but qfair is already registered (another lab is running it) with its defaults and"),
            (&three, Some(&two), "the scenario sets qfair.exit_drains = 3, but qfair is already registered (another lab is running it) with qfair.exit_drains = 2 and"),
            (&two, None, "the scenario sets qfair.exit_drains = 2, but qfair is already registered (another lab is running it) and"),
        ];
        for (wanted, recorded, start) in cases {
            let e = refusal(wanted, recorded).expect("refused");
            assert!(e.starts_with(start), "{e}");
            assert!(e.ends_with("; nothing was run (`rttfairctl unload qfair` first, or wait for the other lab)"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    /// A CCA named twice is refused before the kernel's list is read.
    #[test]
    fn a_cca_named_twice_is_refused() {
        let names: Vec<String> = ["qfair", "cubic", "qfair"].map(String::from).into();
        let e = super::check_available(&names).unwrap_err();
        assert_eq!(e.to_string(), "--cca: 'qfair' named twice");
    }

    /// A project CCA (loaded on demand) and a kernel one that is always
    /// built in pass; an unknown name is refused naming it, wherever it
    /// stands in the list.
    #[test]
    fn check_available_names_the_first_unavailable_cca() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        super::check_available(&names(&["qfair", "reno", "bbr3"])).unwrap();
        let e = super::check_available(&names(&["reno", "qfair", "bbbr"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("congestion control 'bbbr' is neither"), "{e}");
    }
}
