//! open -> load -> register -> pin, and back: unregister.
//!
//! Each step is a function from one typed state to the next, so a caller can
//! only register what loaded and only pin what registered. Failing at any step
//! drops what the earlier steps created: an unpinned link unregisters the CCA
//! when it is dropped, so a failed `load` never leaves a CCA half-registered,
//! and the map pins a failed load or swap made are removed. Only a killed
//! process (SIGKILL while libbpf loads) can leave shared maps with no CCA;
//! the next `load` or `unload` removes them.

use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use libbpf_rs::{Link, MapCore, MapHandle, Object, ObjectBuilder, OpenObject, PrintLevel};

use crate::abi::maps;
use crate::bpffs::{BpfFs, LockGuard, LOCK_WAIT};
use crate::cca::Cca;
use crate::error::{Error, Result};
use crate::{flows, installed, kernel, objects, preflight, stack_depth};

pub use crate::loaded::{is_loaded, pinned};

/// The capacities the per-flow export map may be given, by `load
/// --flows-max` and the daemon's `flow_map_entries` alike: from 1024 (a
/// smaller map is full on any busy host, so most flows go unexported) to
/// 1048576 (about 300 MB of kernel memory at 288 bytes an entry, and the
/// most the daemon's refresh is sized for; 4M would be 1.2 GB).
pub const FLOWS_MAX: std::ops::RangeInclusive<u32> = 1024..=1_048_576;

/// Knobs of a load that matter only when the shared maps are first created.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Capacity of the per-flow export map (default 65536). Not checked
    /// against [`FLOWS_MAX`] here: the CLI and the daemon check what users
    /// give, and tests fill a tiny map on purpose.
    pub flows_max: Option<u32>,
    /// Load this BPF object instead of the embedded build (a developer's own
    /// build of the CCA; it must define `<cca>_ops`).
    pub object: Option<Vec<u8>>,
}

/// Step 1: an object opened for a CCA, not yet in the kernel.
pub struct Opened {
    cca: Cca,
    obj: OpenObject,
    /// Built from the developer's `--object`, not the embedded build.
    custom: bool,
}

/// Step 2: the programs passed the verifier and the maps exist.
pub struct Loaded {
    cca: Cca,
    obj: Object,
    /// What libbpf printed while loading (the verifier's logs, where a log
    /// level was asked for).
    log: String,
}

/// Step 3: the CCA is registered for as long as `link` lives (or is pinned).
pub struct Registered {
    cca: Cca,
    link: Link,
    _obj: Object,
}

/// What `load` did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum LoadOutcome {
    /// Newly registered and pinned.
    Loaded,
    /// Already registered by rttfair; nothing changed.
    AlreadyLoaded,
    /// Pins an interrupted run left were removed first, then loaded as
    /// [`LoadOutcome::Loaded`]: a link pin without a registration, or
    /// shared maps with no CCA's link pin (a load killed while the
    /// verifier ran, after libbpf had pinned them).
    Repaired,
}

/// Open the embedded object of `cca`, wired to the installation's shared maps.
/// A developer's `opts.object` is checked here, before anything reaches the
/// kernel: it must define `<cca>_ops`, and its maps must match the pinned
/// ones; either refusal names `--object`, since the object is what to fix.
pub fn open(cca: Cca, fs: &BpfFs, opts: &LoadOptions) -> Result<Opened> {
    let mut builder = ObjectBuilder::default();
    builder
        .pin_root_path(fs.maps_dir())
        .map_err(|e| Error::bpf("set pin root", e))?;
    let mut obj = builder
        .open_memory(opts.object.as_deref().unwrap_or(objects::cca(cca)))
        .map_err(|e| Error::bpf(format!("open {cca} object"), e))?;
    let custom = opts.object.is_some();
    let ops = cca.ops_map();
    if custom && !obj.maps().any(|m| m.name() == ops.as_str()) {
        return Err(object_error(format!(
            "defines no {ops} (another CCA's object, or not an rttfair CCA?)"
        )));
    }
    for mut map in obj.maps_mut() {
        let name = map.name().to_string_lossy().into_owned();
        let pin = match crate::tunables::pin_of(cca) {
            // a second name's tunables: pinned at their own path
            Some(own) if crate::tunables::map_of(cca) == Some(name.as_str()) && own != name => {
                let pin = fs.map_pin(&own);
                map.set_pin_path(&pin)
                    .map_err(|e| Error::bpf(format!("pin {cca}'s tunables"), e))?;
                pin
            }
            _ => fs.map_pin(&name),
        };
        if pin.exists() {
            let pinned_entries =
                check_pinned_map_matches(&pin, map.map_type(), map.key_size(), map.value_size())
                    .map_err(|e| match e {
                        Error::ForeignPin { reason, .. } if custom => object_error(format!(
                            "its map {name} does not match the installed one ({reason}); build it against this rttfair's headers"
                        )),
                        e => e,
                    })?;
            // The flow map is the one map whose size a load may choose
            // (`flows_max`); a later CCA reuses it at whatever size it was
            // created with. libbpf reuses a pin only if the object's
            // definition matches it, max_entries included, so the object
            // takes the pinned size (else the second CCA of a daemon with
            // flow_map_entries set failed: "error reusing pinned map").
            if name == maps::FLOWS && map.max_entries() != pinned_entries {
                map.set_max_entries(pinned_entries)
                    .map_err(|e| Error::bpf("set flow map size", e))?;
            }
        } else if name == maps::FLOWS {
            if let Some(n) = opts.flows_max {
                map.set_max_entries(n)
                    .map_err(|e| Error::bpf("set flow map size", e))?;
            }
        }
    }
    if cca != cca.base() {
        set_ops_name(&mut obj, cca)?;
    }
    Ok(Opened { cca, obj, custom })
}

/// The kernel's TCP_CA_NAME_MAX: the size of `tcp_congestion_ops.name`.
const CA_NAME_SIZE: usize = 16;

/// Make the object's struct_ops register under `cca`'s name, a second name
/// (`qfair_b`) rather than the one compiled in: its initial value is the
/// object's `struct tcp_congestion_ops`, whose `name` field the object's
/// BTF places.
fn set_ops_name(obj: &mut OpenObject, cca: Cca) -> Result<()> {
    use libbpf_rs::btf::types::{MemberAttr, Struct};
    use libbpf_rs::AsRawLibbpf;
    let missing = |what: &str| Error::NoStructOps(format!("{cca}: the object's {what}"));
    let offset = {
        // SAFETY: the pointer is the live object's, borrowed for this block.
        let raw = unsafe { obj.as_libbpf_object().as_ref() };
        let btf = libbpf_rs::btf::Btf::from_bpf_object(raw)
            .map_err(|e| Error::bpf("read the object's BTF", e))?
            .ok_or_else(|| missing("BTF is missing"))?;
        let ops: Struct = btf
            .type_by_name("tcp_congestion_ops")
            .ok_or_else(|| missing("BTF has no struct tcp_congestion_ops"))?;
        let attr = ops
            .iter()
            .find(|m| m.name.is_some_and(|n| n == "name"))
            .map(|m| m.attr);
        match attr {
            Some(MemberAttr::Normal { offset }) => offset as usize / 8,
            _ => return Err(missing("tcp_congestion_ops has no name field")),
        }
    };
    let ops = cca.ops_map();
    let mut map = obj
        .maps_mut()
        .find(|m| m.name() == ops.as_str())
        .ok_or_else(|| missing(&format!("map {ops} is missing")))?;
    let field = map
        .initial_value_mut()
        .and_then(|v| v.get_mut(offset..offset + CA_NAME_SIZE))
        .ok_or_else(|| missing(&format!("map {ops} has no name field")))?;
    field.fill(0);
    field[..cca.name().len()].copy_from_slice(cca.name().as_bytes());
    Ok(())
}

/// A refusal of the developer's `--object`.
fn object_error(reason: String) -> Error {
    Error::InvalidValue {
        name: "--object".into(),
        reason,
    }
}

/// A pin under our maps directory must be the map this build expects;
/// anything else (a file from another tool, an older layout) is refused.
/// Its number of entries, if it is.
fn check_pinned_map_matches(
    pin: &Path,
    ty: libbpf_rs::MapType,
    key_size: u32,
    value_size: u32,
) -> Result<u32> {
    let foreign = |reason: String| Error::ForeignPin {
        path: pin.to_path_buf(),
        reason,
    };
    let handle =
        MapHandle::from_pinned_path(pin).map_err(|e| foreign(format!("not a BPF map: {e}")))?;
    if handle.map_type() != ty {
        return Err(foreign(format!(
            "type {:?}, expected {:?}",
            handle.map_type(),
            ty
        )));
    }
    if handle.key_size() != key_size || handle.value_size() != value_size {
        return Err(foreign(format!(
            "key/value size {}/{}, expected {key_size}/{value_size}",
            handle.key_size(),
            handle.value_size()
        )));
    }
    Ok(handle.max_entries())
}

static VERIFIER_LOG: Mutex<String> = Mutex::new(String::new());

fn capture_libbpf_output(_level: PrintLevel, msg: String) {
    if let Ok(mut log) = VERIFIER_LOG.lock() {
        log.push_str(&msg);
    }
}

/// The last `lines` lines of what libbpf printed, joined with " | ".
fn log_tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// The verifier's verdict: the lines just before its "processed N insns"
/// summary, where it says what it refused and at which instruction.
fn verifier_reason(log: &str) -> Option<String> {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let end = lines
        .iter()
        .position(|l| l.starts_with("processed ") && l.contains(" insns"))?;
    let prog = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix("libbpf: prog '")
                .and_then(|r| r.split('\'').next())
        })
        .unwrap_or("?");
    Some(format!(
        "program {prog}: {}",
        lines[end.saturating_sub(2)..end].join(" | ")
    ))
}

impl Opened {
    /// Step 2: load into the kernel. A verifier rejection returns the tail of
    /// the verifier log.
    pub fn load(self) -> Result<Loaded> {
        VERIFIER_LOG.lock().map(|mut l| l.clear()).ok();
        let prev = libbpf_rs::set_print(Some((PrintLevel::Debug, capture_libbpf_output)));
        let res = self.obj.load();
        libbpf_rs::set_print(prev);
        let log = VERIFIER_LOG.lock().map(|l| l.clone()).unwrap_or_default();
        match res {
            Ok(obj) => Ok(Loaded {
                cca: self.cca,
                obj,
                log,
            }),
            Err(e) => Err(match classify_load_error(self.cca, e, &log) {
                Error::ForeignPin { reason, .. } if self.custom => object_error(format!(
                    "its maps do not match the installed ones ({reason}); build it against this rttfair's headers"
                )),
                e => e,
            }),
        }
    }
}

fn classify_load_error(cca: Cca, e: libbpf_rs::Error, log: &str) -> Error {
    if log.contains("couldn't reuse pinned map") {
        return Error::ForeignPin {
            path: "maps".into(),
            reason: log_tail(log, 2),
        };
    }
    if let Some(reason) = verifier_reason(log) {
        return Error::Verifier {
            cca: cca.to_string(),
            log_tail: reason,
        };
    }
    if log.contains("struct_ops") && (log.contains("not found") || log.contains("Unknown")) {
        return Error::NoStructOps(log_tail(log, 2));
    }
    Error::bpf(format!("load {cca} ({})", log_tail(log, 3)), e)
}

impl Loaded {
    /// Step 3: register the struct_ops with the kernel via a BPF link.
    pub fn register(mut self) -> Result<Registered> {
        let ops = self.cca.ops_map();
        let mut map = self
            .obj
            .maps_mut()
            .find(|m| m.name() == ops.as_str())
            .ok_or_else(|| Error::NoStructOps(format!("object has no map {ops}")))?;
        let link = map.attach_struct_ops().map_err(|e| match e.kind() {
            libbpf_rs::ErrorKind::AlreadyExists => Error::NameTaken {
                name: self.cca.to_string(),
                pin: "(none)".into(),
            },
            _ => Error::bpf(format!("register {}", self.cca), e),
        })?;
        Ok(Registered {
            cca: self.cca,
            link,
            _obj: self.obj,
        })
    }
}

impl Registered {
    /// Step 4: pin the link so the registration outlives this process.
    pub fn pin(mut self, fs: &BpfFs) -> Result<()> {
        let path = fs.link_pin(self.cca);
        self.link
            .pin(&path)
            .map_err(|e| Error::bpf(format!("pin {}", path.display()), e))?;
        Ok(())
    }
}

/// Load `cca` end to end: preflight, open, load, register, pin. Idempotent.
/// Refused while CCAs of another build's ABI are loaded without this
/// build's maps ([`installed::check`]): adopting one would read nothing,
/// and loading another would create this build's maps and hide them.
pub fn load(cca: Cca, fs: &BpfFs, opts: &LoadOptions) -> Result<LoadOutcome> {
    preflight::check_can_register(&format!("loading {cca}"))?;
    preflight::check_btf()?;
    let _lock = fs.ensure_and_lock(LOCK_WAIT)?;
    installed::check(fs)?;

    let pin = fs.link_pin(cca);
    let registered = kernel::is_registered(cca.name())?;
    let mut outcome = LoadOutcome::Loaded;
    if remove_stale_maps(fs) {
        outcome = LoadOutcome::Repaired;
    }
    if pin.exists() {
        if registered && Link::open(&pin).is_ok() {
            if opts.object.is_some() {
                // "already loaded" would leave the user believing their
                // build runs.
                return Err(object_error(format!(
                    "{cca} is already loaded (another build); `rttfairctl swap {cca} --object <file>` replaces it in place"
                )));
            }
            return Ok(LoadOutcome::AlreadyLoaded);
        }
        // A pin without a live registration: left by an interrupted run.
        fs::remove_file(&pin)
            .map_err(|e| Error::io(format!("remove stale {}", pin.display()), e))?;
        outcome = LoadOutcome::Repaired;
    }
    if kernel::is_registered(cca.name())? {
        return Err(Error::NameTaken {
            name: cca.to_string(),
            pin,
        });
    }
    let before = map_pins(fs);
    let res = open(cca, fs, opts)
        .and_then(Opened::load)
        .and_then(Loaded::register);
    match res
        .and_then(|r| r.pin(fs))
        .and_then(|()| crate::tunables::write_host_facts(fs, cca))
    {
        Ok(()) => Ok(outcome),
        Err(e) => {
            // Nothing else uses what this load created; but a foreign pin is
            // not ours to remove.
            if !matches!(e, Error::ForeignPin { .. }) {
                remove_new_maps(fs, &before);
            }
            Err(e)
        }
    }
}

/// What a swap did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SwapReport {
    /// Sockets that were on the CCA at the swap: they keep the previous
    /// programs until they close or are migrated. `None` when they cannot
    /// be counted: the previous build was of another ABI, whose counters
    /// this build does not read.
    pub sockets_on_previous: Option<u64>,
}

/// Step 5: replace a loaded CCA's programs with `opts.object` (or the
/// embedded build) by updating its pinned struct_ops link in place
/// (BPF_LINK_UPDATE). The name stays registered throughout; new sockets get
/// the new programs. Any failure before the update leaves the old
/// implementation untouched; the kernel's update itself is atomic.
pub fn update(cca: Cca, fs: &BpfFs, opts: &LoadOptions) -> Result<SwapReport> {
    use libbpf_rs::AsRawLibbpf;
    preflight::check_can_register(&format!("swapping {cca}"))?;
    let pin = fs.link_pin(cca);
    if !pin.exists() || !kernel::is_registered(cca.name())? {
        return Err(Error::NotLoaded {
            cca: cca.to_string(),
        });
    }
    let _lock = fs.lock(LOCK_WAIT)?;
    let sockets_on_previous = flows::live_sockets(fs, cca).ok();
    let before = map_pins(fs);
    let swapped = (|| {
        let mut loaded = open(cca, fs, opts)?.load()?;
        let link =
            Link::open(&pin).map_err(|e| Error::bpf(format!("open {}", pin.display()), e))?;
        let ops = cca.ops_map();
        let map = loaded
            .obj
            .maps_mut()
            .find(|m| m.name() == ops.as_str())
            .ok_or_else(|| Error::NoStructOps(format!("object has no map {ops}")))?;
        // SAFETY: both pointers come from live libbpf objects owned here.
        let rc = unsafe {
            libbpf_rs::libbpf_sys::bpf_link__update_map(
                link.as_libbpf_object().as_ptr(),
                map.as_libbpf_object().as_ptr(),
            )
        };
        if rc != 0 {
            return Err(Error::io(
                format!("update {cca} in place (the previous implementation stays)"),
                std::io::Error::from_raw_os_error(-rc),
            ));
        }
        Ok(())
    })();
    if let Err(e) = swapped {
        // Maps this attempt pinned (another ABI's build being replaced has
        // none of this build's) would hide that build from installed::check.
        if !matches!(e, Error::ForeignPin { .. }) {
            remove_new_maps(fs, &before);
        }
        return Err(e);
    }
    Ok(SwapReport {
        sockets_on_previous,
    })
}

/// Step 6: unregister by removing the link pin. Refuses while sockets still
/// use the CCA unless `force`.
pub fn unregister(cca: Cca, fs: &BpfFs, force: bool) -> Result<()> {
    preflight::require(&format!("unloading {cca}"), preflight::UNREGISTER)?;
    let pin = fs.link_pin(cca);
    if !pin.exists() {
        if kernel::is_registered(cca.name())? {
            return Err(Error::NameTaken {
                name: cca.to_string(),
                pin,
            });
        }
        return Err(Error::NotLoaded {
            cca: cca.to_string(),
        });
    }
    let lock = fs.lock(LOCK_WAIT)?;
    unregister_locked(cca, fs, force, &lock)
}

/// [`unregister`] for a caller that holds the installation lock across
/// its own checks (`_lock` proves it).
fn unregister_locked(cca: Cca, fs: &BpfFs, force: bool, _lock: &LockGuard) -> Result<()> {
    let pin = fs.link_pin(cca);
    if !pin.exists() {
        return Err(Error::NotLoaded {
            cca: cca.to_string(),
        });
    }
    if !force {
        // Uncountable (another build's ABI) is a refusal, never zero.
        let sockets = flows::live_sockets(fs, cca)?;
        if sockets > 0 {
            return Err(Error::InUse {
                cca: cca.to_string(),
                sockets,
            });
        }
    }
    fs::remove_file(&pin).map_err(|e| Error::io(format!("remove {}", pin.display()), e))?;
    // The kernel unregisters when the last link reference goes; it is
    // synchronous for pins, but give RCU a moment before reporting.
    for _ in 0..50 {
        if !kernel::is_registered(cca.name())? {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if crate::loaded::pinned(fs).is_empty() {
        remove_shared_maps(fs);
    } else {
        // Its own state goes with it, so a reload starts from the defaults
        // (a lab's fairtt.scope must not leak into an operator's fairtt).
        // Sockets still on it (--force) keep the maps they hold.
        for map in own_maps(cca) {
            let _ = fs::remove_file(fs.map_pin(&map));
        }
    }
    Ok(())
}

/// The pins of the maps only `cca` has (the rest are shared by every CCA,
/// qfair's second names sharing all but their tunables with qfair).
fn own_maps(cca: Cca) -> Vec<String> {
    let mut own: Vec<String> = crate::tunables::pin_of(cca).into_iter().collect();
    if cca == Cca::Fairtt {
        own.push(maps::FAIRTT_REGISTRY.to_string());
    }
    own
}

/// What [`unload_all`] did to one CCA.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unloaded {
    pub cca: Cca,
    /// With a migration target: how many sockets were moved to it first.
    pub migrated: Option<u64>,
}

/// Unregister each of `ccas`, first moving their sockets to `migrate_to`
/// when given: in this network namespace and those in /run/netns, which is
/// what [`crate::migrate::migrate_all`] reaches. Everything that can be
/// checked is checked before the first socket moves or CCA goes, so a
/// refusal changes nothing: the arguments ([`check_unload_args`]), the
/// privileges, each CCA's state ([`check_unload_state`]) and, with a
/// migration, that every socket of each CCA is in a namespace it reaches
/// ([`check_reachable`]), all under one hold of the installation lock, so
/// no other rttfairctl changes what was checked. The refusals after a
/// change come from sockets, which the lock does not stop applications
/// opening: sockets a migration could not move (refused by the kernel, or
/// opened meanwhile where it does not reach) keep every CCA loaded (the
/// moved ones stay moved); a socket opened on a later CCA after the check
/// stops the unload there, and the error names the CCAs already unloaded
/// ([`Error::Partial`]). Refuses while sockets use a CCA unless `force` or
/// `migrate_to`.
pub fn unload_all(
    ccas: &[Cca],
    fs: &BpfFs,
    force: bool,
    migrate_to: Option<&str>,
) -> Result<Vec<Unloaded>> {
    let target = migrate_to
        .map(|t| kernel::is_registered(t).map(|r| (t, r)))
        .transpose()?;
    check_unload_args(ccas, force, target)?;
    let what = format!(
        "unloading {}",
        ccas.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
    );
    preflight::require(&what, preflight::UNREGISTER)?;
    if migrate_to.is_some() {
        preflight::require("migrating sockets", preflight::ITERATE_SOCKETS)?;
    }
    // One hold across the checks and the acts, so no other rttfairctl
    // changes what was checked. No root: nothing is pinned, and the checks
    // below say so for each CCA.
    let lock = match fs.lock(LOCK_WAIT) {
        Ok(l) => Some(l),
        Err(Error::NothingLoaded { .. }) => None,
        Err(e) => return Err(e),
    };
    // Maps with no CCA to use them (a killed load's) go; each CCA is then
    // refused as not loaded, saying so.
    let stale = lock.is_some() && remove_unused(fs);
    let mut registered = Vec::new();
    let mut live = Vec::new();
    for &cca in ccas {
        // Sockets that cannot be counted (a CCA of another build's ABI)
        // only matter to a migration or an unforced unload: both refuse
        // here, before anything moves.
        let sockets = match flows::live_sockets(fs, cca) {
            Err(_) if force => 0,
            counted => counted?,
        };
        let state = UnloadState {
            pinned: fs.link_pin(cca).exists(),
            registered: kernel::is_registered(cca.name())?,
            sockets,
        };
        check_unload_state(cca, &fs.link_pin(cca), state, force || migrate_to.is_some()).map_err(
            |e| match e {
                Error::NotLoaded { cca } if stale => Error::NotLoadedStale { cca },
                e => e,
            },
        )?;
        registered.push(state.registered);
        live.push(state.sockets);
    }
    if migrate_to.is_some() {
        for ((&cca, &registered), &sockets) in ccas.iter().zip(&registered).zip(&live) {
            if registered && sockets > 0 {
                let reachable = crate::migrate::count_reachable(cca.name())?;
                check_reachable(cca, sockets, reachable)?;
            }
        }
    }
    let mut done: Vec<Unloaded> = ccas
        .iter()
        .map(|&cca| Unloaded {
            cca,
            migrated: None,
        })
        .collect();
    if let Some(to) = migrate_to {
        for (u, registered) in done.iter_mut().zip(registered) {
            // A stale pin (no registration) has no sockets to move.
            let moved = if registered {
                crate::migrate::migrate_all(u.cca.name(), to, None, &Default::default())?.moved
            } else {
                0
            };
            u.migrated = Some(moved);
        }
        for &cca in ccas {
            let sockets = flows::live_sockets(fs, cca)?;
            if sockets > 0 {
                return Err(Error::InUse {
                    cca: cca.to_string(),
                    sockets,
                });
            }
        }
    }
    let lock = lock.ok_or_else(|| Error::NothingLoaded {
        path: fs.root().to_path_buf(),
    })?;
    for (i, &cca) in ccas.iter().enumerate() {
        // Sockets opened since the check can still refuse one: say which
        // went already.
        unregister_locked(cca, fs, force, &lock).map_err(|e| Error::after_some(e, &ccas[..i]))?;
    }
    Ok(done)
}

/// What [`unload_all`] checks of one CCA before changing anything.
#[derive(Debug, Clone, Copy)]
pub struct UnloadState {
    /// This installation pinned its registration.
    pub pinned: bool,
    /// The kernel has a congestion control of its name.
    pub registered: bool,
    /// Sockets using it now.
    pub sockets: u64,
}

/// The arguments of [`unload_all`], checked before anything is read: no
/// CCA named twice, `force` and a migration not both (the sockets either
/// stay or move), and a migration target that is registered and not one of
/// the CCAs going. `target` is the target's name and whether it is
/// registered.
pub fn check_unload_args(ccas: &[Cca], force: bool, target: Option<(&str, bool)>) -> Result<()> {
    for (i, cca) in ccas.iter().enumerate() {
        if ccas[..i].contains(cca) {
            return Err(Error::InvalidValue {
                name: "the CCAs to unload".into(),
                reason: format!("{cca} is named twice"),
            });
        }
    }
    let Some((to, registered)) = target else {
        return Ok(());
    };
    let bad = |reason: String| Error::InvalidValue {
        name: "--migrate-to".into(),
        reason,
    };
    if force {
        return Err(bad("the sockets cannot both stay (--force) and move".into()));
    }
    if ccas.iter().any(|c| c.name() == to) {
        return Err(bad(format!("{to} is one of the CCAs being unloaded")));
    }
    if !registered {
        return Err(Error::NotRegistered {
            name: format!("{to} (the --migrate-to target)"),
        });
    }
    Ok(())
}

/// One CCA's state, checked before [`unload_all`] changes anything: it
/// must be pinned by this installation at `pin` (a registration without
/// our pin is another program's), and unused unless its sockets may stay or move
/// (`sockets_may_stay_or_move`: `force` or a migration).
pub fn check_unload_state(
    cca: Cca,
    pin: &Path,
    state: UnloadState,
    sockets_may_stay_or_move: bool,
) -> Result<()> {
    if !state.pinned {
        return Err(if state.registered {
            Error::NameTaken {
                name: cca.to_string(),
                pin: pin.to_path_buf(),
            }
        } else {
            Error::NotLoaded {
                cca: cca.to_string(),
            }
        });
    }
    if !sockets_may_stay_or_move && state.sockets > 0 {
        return Err(Error::InUse {
            cca: cca.to_string(),
            sockets: state.sockets,
        });
    }
    Ok(())
}

/// Before a migration moves anything: `sockets` use `cca` (its live count,
/// every namespace) and `reachable` of them are where the migration
/// reaches; more in use than reachable means some would stay, so refuse now
/// rather than after moving the others.
pub fn check_reachable(cca: Cca, sockets: u64, reachable: u64) -> Result<()> {
    if sockets > reachable {
        return Err(Error::Unreachable {
            cca: cca.to_string(),
            sockets,
            unreachable: sockets - reachable,
        });
    }
    Ok(())
}

/// The map pins in the installation now.
fn map_pins(fs: &BpfFs) -> Vec<std::path::PathBuf> {
    fs::read_dir(fs.maps_dir())
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// After a failed load or swap: remove the map pins it made (those not in
/// `before`), or every pin when no CCA is left to use them.
fn remove_new_maps(fs: &BpfFs, before: &[std::path::PathBuf]) {
    if crate::loaded::pinned(fs).is_empty() {
        return remove_shared_maps(fs);
    }
    for p in map_pins(fs) {
        if !before.contains(&p) {
            let _ = fs::remove_file(p);
        }
    }
}

/// With no CCA left, the shared maps go too, so the host is left as found.
fn remove_shared_maps(fs: &BpfFs) {
    if let Ok(entries) = fs::read_dir(fs.maps_dir()) {
        for e in entries.flatten() {
            let _ = fs::remove_file(e.path());
        }
    }
    fs.remove_if_empty();
}

/// What the verifier and JIT made of one program.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProgramStats {
    pub name: String,
    /// Instructions in the object.
    pub insns: usize,
    /// Instructions the verifier processed (its cost, and the figure that
    /// approaches the 1M limit as a program grows).
    pub verified_insns: u32,
    pub xlated_bytes: u32,
    pub jited_bytes: u32,
    /// Each subprogram's stack frame as the verifier checks it (main first;
    /// [`stack_depth::frame_depths`]).
    pub stack_frames: Vec<u32>,
    /// The same as the verifier log prints them ("stack depth"), after the
    /// verifier's own rewrites (an inlined bpf_loop adds 24 bytes); empty if
    /// the log had none.
    pub stack_frames_logged: Vec<u32>,
    /// The deepest chain of calls' stack, which the verifier refuses above
    /// 512 bytes ([`stack_depth::deepest_chain`]).
    pub stack_bytes: Option<u32>,
}

/// Load `cca` without registering it and report each program's verifier and
/// JIT figures, its stack among them (the programs are loaded at the
/// verifier's stats log level for that). `scratch` must be a bpffs root
/// nobody else uses; its maps are removed afterwards.
pub fn inspect_programs(cca: Cca, scratch: &BpfFs) -> Result<Vec<ProgramStats>> {
    scratch.ensure()?;
    let res = (|| {
        let mut opened = open(cca, scratch, &LoadOptions::default())?;
        for mut prog in opened.obj.progs_mut() {
            // the stats alone (stack depth, processed insns), no trace
            prog.set_log_level(stack_depth::BPF_LOG_STATS);
        }
        let loaded = opened.load()?;
        let jit = stack_depth::kernel_jits();
        let mut out = Vec::new();
        for prog in loaded.obj.progs() {
            use std::os::fd::{AsFd, AsRawFd};
            let mut info = libbpf_rs::libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of_val(&info) as u32;
            let rc = unsafe {
                libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                    prog.as_fd().as_raw_fd(),
                    &mut info,
                    &mut len,
                )
            };
            if rc != 0 {
                return Err(Error::io(
                    "bpf_prog_get_info_by_fd",
                    std::io::Error::last_os_error(),
                ));
            }
            let name = prog.name().to_string_lossy().into_owned();
            let stack_frames = stack_depth::frame_depths(prog.insns());
            out.push(ProgramStats {
                insns: prog.insn_cnt(),
                verified_insns: info.verified_insns,
                xlated_bytes: info.xlated_prog_len,
                jited_bytes: info.jited_prog_len,
                stack_bytes: stack_depth::deepest_chain(prog.insns(), &stack_frames, jit),
                stack_frames,
                stack_frames_logged: stack_depth::parse_stack_depths(&loaded.log, &name)
                    .unwrap_or_default(),
                name,
            });
        }
        Ok(out)
    })();
    remove_shared_maps(scratch);
    res
}

/// Create (or reuse) the installation's shared maps without registering any
/// CCA: the maps of the bbr1 object are created and pinned, the programs are
/// loaded and then dropped. Used by benchmarks that fill the maps with
/// synthetic flows.
pub fn create_shared_maps(fs: &BpfFs, opts: &LoadOptions) -> Result<()> {
    preflight::check_can_register("creating rttfair maps")?;
    fs.ensure()?;
    let _loaded = open(Cca::Bbr1, fs, opts)?.load()?;
    Ok(())
}

/// Remove every pin of an installation that has no CCA registered (the
/// tree too). Says whether there were maps to remove.
pub fn remove_unused(fs: &BpfFs) -> bool {
    let stale = remove_stale_maps(fs);
    if crate::loaded::pinned(fs).is_empty() {
        fs.remove_if_empty();
    }
    stale
}

/// Shared maps with no CCA's link pin to use them are what a killed load
/// leaves (libbpf pins them before the verifier runs): remove them (the
/// tree stays), and say whether there were any. Only pins that are maps
/// this build defines, of the shape it defines them, count as ours: any
/// other pin (another tool's, another layout's) is left for [`open`] to
/// refuse by name, never deleted.
fn remove_stale_maps(fs: &BpfFs) -> bool {
    if !crate::loaded::pinned(fs).is_empty() {
        return false;
    }
    let pins = map_pins(fs);
    if pins.is_empty() {
        return false;
    }
    let ours = this_builds_maps();
    let pins: Vec<_> = pins.into_iter().filter(|p| is_one_of(p, &ours)).collect();
    for p in &pins {
        let _ = fs::remove_file(p);
    }
    !pins.is_empty()
}

/// Every map this build's embedded objects define: name, type, key and
/// value sizes. Opens the objects without loading them (nothing reaches
/// the kernel); only reached when an installation has map pins and no CCA.
fn this_builds_maps() -> Vec<(String, libbpf_rs::MapType, u32, u32)> {
    let mut all = Vec::new();
    for cca in Cca::ALL {
        if let Ok(obj) = ObjectBuilder::default().open_memory(objects::cca(cca)) {
            for m in obj.maps() {
                all.push((
                    m.name().to_string_lossy().into_owned(),
                    m.map_type(),
                    m.key_size(),
                    m.value_size(),
                ));
            }
        }
    }
    all
}

/// Whether the pin `pin` is one of `ours` under its name, with that shape.
fn is_one_of(pin: &Path, ours: &[(String, libbpf_rs::MapType, u32, u32)]) -> bool {
    let Some(name) = pin.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    // a second name's tunables: "<map>_<name>" (tunables::pin_of)
    let second = |n: &str| {
        name.strip_prefix(n)
            .and_then(|r| r.strip_prefix('_'))
            .and_then(|r| r.parse::<Cca>().ok())
            .is_some_and(|c| c != c.base() && crate::tunables::map_of(c) == Some(n))
    };
    ours.iter()
        .find(|(n, ..)| n == name || second(n))
        .is_some_and(|&(_, ty, k, v)| check_pinned_map_matches(pin, ty, k, v).is_ok())
}

#[cfg(test)]
mod tests {
    use super::{
        check_reachable, check_unload_args, check_unload_state, open, LoadOptions, UnloadState,
    };
    use crate::{objects, BpfFs, Cca, Error};

    /// `--object` of another CCA (qfair's build given for fairtt) is refused
    /// as the object's fault before anything reaches the kernel, not as a
    /// kernel without struct_ops.
    #[test]
    fn an_object_without_the_ccas_ops_is_refused_naming_object() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = LoadOptions {
            object: Some(objects::cca(Cca::Qfair).to_vec()),
            flows_max: None,
        };
        let e = open(Cca::Fairtt, &BpfFs::new(tmp.path()), &opts)
            .err()
            .expect("qfair's object accepted as fairtt's");
        let line = e.to_string();
        assert!(
            line.contains("--object") && line.contains("fairtt_ops"),
            "{line}"
        );
        assert!(!line.contains("kernel"), "{line}");
        // The embedded build of the same CCA opens.
        let own = LoadOptions {
            object: Some(objects::cca(Cca::Qfair).to_vec()),
            flows_max: None,
        };
        assert!(open(Cca::Qfair, &BpfFs::new(tmp.path()), &own).is_ok());
    }

    const LOADED: UnloadState = UnloadState {
        pinned: true,
        registered: true,
        sockets: 0,
    };

    /// `unload A B --migrate-to X` is refused, before anything is read or
    /// moved, when a CCA is named twice, when the sockets are asked both to
    /// stay and to move, when X is one of the CCAs going, and when X is not
    /// registered; a registered X that is not going passes.
    #[test]
    fn unload_arguments_are_checked_before_anything_moves() {
        use Cca::{Adbbr, Fairtt};
        let e = check_unload_args(&[Fairtt, Adbbr, Fairtt], false, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for the CCAs to unload: fairtt is named twice"
        );
        let e = check_unload_args(&[Fairtt], true, Some(("cubic", true))).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid value for --migrate-to"),
            "{e}"
        );
        let e = check_unload_args(&[Fairtt, Adbbr], false, Some(("adbbr", true))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for --migrate-to: adbbr is one of the CCAs being unloaded"
        );
        let e = check_unload_args(&[Fairtt, Adbbr], false, Some(("cubicc", false))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cubicc (the --migrate-to target) is not a registered congestion control"
        );
        check_unload_args(&[Fairtt, Adbbr], false, Some(("cubic", true))).unwrap();
        check_unload_args(&[Fairtt, Adbbr], true, None).unwrap();
    }

    /// Each CCA must be pinned by this installation: not loaded, or
    /// registered by another program, is refused naming it; one in use is
    /// refused unless its sockets may stay (--force) or move (a target).
    #[test]
    fn each_cca_must_be_ours_and_idle_unless_its_sockets_stay_or_move() {
        let pin = std::path::PathBuf::from("/sys/fs/bpf/rttfair/links/adbbr");
        let pin = pin.as_path();
        let missing = UnloadState {
            pinned: false,
            registered: false,
            ..LOADED
        };
        let e = check_unload_state(Cca::Adbbr, pin, missing, true).unwrap_err();
        assert!(
            matches!(e, Error::NotLoaded { ref cca } if cca == "adbbr"),
            "{e}"
        );
        let foreign = UnloadState {
            pinned: false,
            ..LOADED
        };
        let e = check_unload_state(Cca::Adbbr, pin, foreign, true).unwrap_err();
        assert!(
            matches!(e, Error::NameTaken { ref name, .. } if name == "adbbr"),
            "{e}"
        );
        let busy = UnloadState {
            sockets: 3,
            ..LOADED
        };
        let e = check_unload_state(Cca::Qfair, pin, busy, false).unwrap_err();
        assert!(matches!(e, Error::InUse { sockets: 3, .. }), "{e}");
        check_unload_state(Cca::Qfair, pin, busy, true).unwrap();
        check_unload_state(Cca::Qfair, pin, LOADED, false).unwrap();
    }

    /// A migration that would leave sockets behind (in namespaces it does
    /// not reach) is refused before it moves any, naming how many; one that
    /// reaches them all (or more: sockets opened since the count) passes.
    #[test]
    fn a_migration_that_cannot_reach_every_socket_is_refused_up_front() {
        let e = check_reachable(Cca::Fairtt, 5, 3).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unreachable {
                    sockets: 5,
                    unreachable: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().starts_with(
                "fairtt: 2 of its 5 socket(s) are in network namespaces --migrate-to does not reach"
            ),
            "{e}"
        );
        check_reachable(Cca::Fairtt, 5, 5).unwrap();
        check_reachable(Cca::Fairtt, 5, 6).unwrap();
    }
}
