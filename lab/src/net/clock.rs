//! The clock of the lab's timing threads and their footing: the delay
//! element's time base, shared with the self-check and the run's sampling,
//! and the real-time priority the element's and the probe's threads ask
//! for.

/// The element's clock (CLOCK_MONOTONIC, ns): the time base of
/// [`PathDelay::change_at_ns`](crate::net::pathsched::PathDelay::change_at_ns).
pub fn clock_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Ask for SCHED_FIFO at `priority` and no timer slack for the calling
/// thread (best effort: refused, it runs as before).
pub(crate) fn realtime_priority(priority: i32) {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: plain syscalls on the calling thread with valid arguments.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}
