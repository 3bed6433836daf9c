//! SIGINT/SIGTERM during a command that changes several things (`load A B`,
//! `unload`, `swap`): noted instead of fatal, so the command finishes or
//! undoes its step and never dies half-done. A second signal ends the
//! process at once, for a step that hangs.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// The signals caught from [`Interrupts::catch`] on.
pub struct Interrupts {
    /// The last signal caught (0: none).
    caught: Arc<AtomicUsize>,
}

impl Interrupts {
    /// Catch SIGINT and SIGTERM for the rest of the process.
    pub fn catch() -> Result<Interrupts> {
        let caught = Arc::new(AtomicUsize::new(0));
        let armed = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // The shutdown first: it acts only once `armed` was set, by
            // an earlier signal.
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, armed.clone())
                .and_then(|_| signal_hook::flag::register(sig, armed.clone()))
                .and_then(|_| signal_hook::flag::register_usize(sig, caught.clone(), sig as usize))
                .context("catch SIGINT/SIGTERM")?;
        }
        Ok(Interrupts { caught })
    }

    /// The signal caught so far, if any.
    pub fn caught(&self) -> Option<i32> {
        match self.caught.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig as i32),
        }
    }
}

/// A command stopped by `signal` after undoing what it had done (`note`
/// says what). `main` exits with 128 + signal, as a shell expects of a
/// process a signal ended.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
    pub note: String,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.signal {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "a signal",
        };
        write!(f, "interrupted by {name}{}", self.note)
    }
}

impl std::error::Error for Interrupted {}

impl Interrupted {
    /// The exit code of a process this signal ended.
    pub fn exit_code(&self) -> u8 {
        (128 + self.signal).clamp(0, 255) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line names the signal and what was undone; the exit code is a
    /// shell's for that signal (130 for SIGINT, 143 for SIGTERM).
    #[test]
    fn an_interruption_says_which_signal_and_exits_as_the_shell_expects() {
        let i = Interrupted {
            signal: SIGINT,
            note: "; unloaded fairtt again".into(),
        };
        assert_eq!(
            i.to_string(),
            "interrupted by SIGINT; unloaded fairtt again"
        );
        assert_eq!(i.exit_code(), 130);
        let t = Interrupted {
            signal: SIGTERM,
            note: String::new(),
        };
        assert_eq!(t.exit_code(), 143);
    }
}
