//! One error type for every way a lifecycle step can fail, each rendered as
//! one line an operator can act on.

use std::path::PathBuf;

/// Errors from the loader. `Display` is a single, self-contained line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("permission denied: {what} needs {missing} (run as root)")]
    NotPrivileged { what: String, missing: String },
    #[error("kernel has no BTF ({path} missing): rttfair needs CONFIG_DEBUG_INFO_BTF=y")]
    NoBtf { path: PathBuf },
    #[error("kernel cannot register BPF congestion controls ({0}); needs Linux >= 6.10 with CONFIG_BPF_JIT and struct_ops; `rttfairctl doctor` says what is missing")]
    NoStructOps(String),
    #[error("bpffs unavailable at {path}: {reason}")]
    Bpffs { path: PathBuf, reason: String },
    #[error("unknown CCA '{name}' (valid: {valid})")]
    UnknownCca { name: String, valid: String },
    #[error("the name '{name}' is already registered by another congestion control (not by rttfair at {pin})")]
    NameTaken { name: String, pin: PathBuf },
    #[error("the verifier rejected {cca}: {log_tail}")]
    Verifier { cca: String, log_tail: String },
    #[error("no rttfair CCA has been loaded (nothing pinned at {path})")]
    NothingLoaded { path: PathBuf },
    #[error("{cca} is not loaded")]
    NotLoaded { cca: String },
    #[error("{cca} is not loaded (removed the shared maps an interrupted load left)")]
    NotLoadedStale { cca: String },
    #[error("{name} is not a registered congestion control")]
    NotRegistered { name: String },
    #[error("{cca} is used by {sockets} socket(s); close or migrate them first, or pass --force")]
    InUse { cca: String, sockets: u64 },
    #[error("pinned map {path} does not match this build ({reason}); remove it or unload all rttfair CCAs")]
    ForeignPin { path: PathBuf, reason: String },
    #[error("{ccas} loaded by a build of {installed}; this build is ABI v{this} and finds no maps of its own: run `rttfairctl swap <cca>` for each (open sockets keep the old build), or `rttfairctl unload --force` them and load again")]
    AbiMismatch {
        ccas: String,
        installed: String,
        this: u32,
    },
    #[error("{cca}: {unreachable} of its {sockets} socket(s) are in network namespaces --migrate-to does not reach (it covers this one and those in /run/netns, not a container runtime's or an unshared one); nothing was moved: migrate them from inside their namespace first, or unload --force")]
    Unreachable {
        cca: String,
        sockets: u64,
        unreachable: u64,
    },
    #[error("another rttfairctl holds the lock on {path}")]
    Busy { path: PathBuf },
    #[error("invalid value for {name}: {reason}")]
    InvalidValue { name: String, reason: String },
    #[error("{source} ({done} already unloaded)")]
    Partial { done: String, source: Box<Error> },
    #[error("cannot take {cca} over from the lab that loaded it (remove {path}: {reason}); that lab will unload it when it ends")]
    Adopt {
        cca: String,
        path: PathBuf,
        reason: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{context}: {source}")]
    Bpf {
        context: String,
        #[source]
        source: libbpf_rs::Error,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// `e`, saying that `done` (CCAs, by their names) already went before
    /// it: the error line of a multi-CCA command that stopped part way.
    pub(crate) fn after_some(e: Error, done: &[impl std::fmt::Display]) -> Self {
        if done.is_empty() {
            return e;
        }
        Error::Partial {
            done: done
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            source: Box::new(e),
        }
    }

    pub(crate) fn bpf(context: impl Into<String>, source: libbpf_rs::Error) -> Self {
        Error::Bpf {
            context: context.into(),
            source,
        }
    }
}
