//! FaiRTT's registry of minRTT classes (bpf/include/fairtt_registry.h),
//! compiled for the host by build.rs: the slot-state transitions behind
//! Wfcount (Alg. 1 line 4), run over a plain array the way fairtt.bpf.c runs
//! them over the pinned map, flow by flow, round by round.

// The host build of the BPF headers is linked into the loader crate.
extern crate rttfair_loader;

/// `struct fairtt_slot` (bpf/include/rttfair_abi.h); its size is checked
/// against the C one in every test.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    min_rtt_us: u32,
    flows: u32,
    last_seen_ns: u64,
    scope_id: u32,
    _pad: u32,
}

/// `struct fairtt_member` (bpf/include/fairtt_registry.h).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Member {
    min_rtt_us: u32,
    scope_id: u32,
    slot: u8,
}

const NO_SLOT: u8 = 0xff;

extern "C" {
    fn host_fairtt_registry_round(
        slots: *mut Slot,
        m: *mut Member,
        now: u64,
        window_ns: u64,
        min_rtt_us: u32,
        tol_pct: u32,
        scope_id: u32,
        scoped: i32,
    ) -> u32;
    fn host_fairtt_leave_slot(slots: *mut Slot, m: *mut Member) -> i32;
    fn host_fairtt_registry_slots() -> u32;
    fn host_fairtt_slot_size() -> u32;
    fn host_fairtt_member_size() -> u32;
}

const MS: u64 = 1_000_000;
/// fairtt's defaults: a 1 s activity window, 10 % class tolerance, host scope.
const WINDOW_NS: u64 = 1000 * MS;
const TOL_PCT: u32 = 10;

/// The pinned map, as an array.
struct Registry {
    slots: Vec<Slot>,
}

/// One flow: its minRTT and its membership (what fairtt_flow keeps).
struct Flow {
    min_rtt_us: u32,
    m: Member,
}

impl Flow {
    fn new(min_rtt_us: u32) -> Self {
        Flow {
            min_rtt_us,
            m: Member {
                min_rtt_us: 0,
                scope_id: 0,
                slot: NO_SLOT,
            },
        }
    }
}

impl Registry {
    fn new() -> Self {
        // SAFETY: functions of no arguments returning constants.
        unsafe {
            assert_eq!(
                host_fairtt_slot_size() as usize,
                std::mem::size_of::<Slot>()
            );
            assert_eq!(
                host_fairtt_member_size() as usize,
                std::mem::size_of::<Member>()
            );
        }
        let n = unsafe { host_fairtt_registry_slots() } as usize;
        Registry {
            slots: vec![Slot::default(); n],
        }
    }

    /// One round of `f` at `now_ns`: its Wfcount.
    fn round(&mut self, f: &mut Flow, now_ns: u64) -> u32 {
        // SAFETY: `slots` has FAIRTT_REGISTRY_SLOTS entries (checked in new)
        // and the C side indexes it only by slot numbers below that.
        unsafe {
            host_fairtt_registry_round(
                self.slots.as_mut_ptr(),
                &mut f.m,
                now_ns,
                WINDOW_NS,
                f.min_rtt_us,
                TOL_PCT,
                0,
                0,
            )
        }
    }

    /// `f`'s connection closes (cca_release).
    fn leave(&mut self, f: &mut Flow) -> bool {
        // SAFETY: as in round.
        unsafe { host_fairtt_leave_slot(self.slots.as_mut_ptr(), &mut f.m) != 0 }
    }

    fn slot_of(&self, f: &Flow) -> Slot {
        self.slots[f.m.slot as usize]
    }
}

/// Both flows run their rounds (every `rtt_ms`, in turn) from `from_ms` to
/// `to_ms`; returns the last Wfcount of each. (Times start above 0: a
/// last_seen_ns of 0 marks a free slot, and ktime is never 0.)
fn run_both(
    reg: &mut Registry,
    a: &mut Flow,
    b: &mut Flow,
    from_ms: u64,
    to_ms: u64,
    rtt_ms: u64,
) -> (u32, u32) {
    let (mut ca, mut cb) = (0, 0);
    let mut t = from_ms;
    while t < to_ms {
        ca = reg.round(a, t * MS);
        cb = reg.round(b, t * MS + 1);
        t += rtt_ms;
    }
    (ca, cb)
}

/// A in the 10 ms class and B in the 50 ms class, both running their rounds
/// every 10 ms from 10 ms to `to_ms`: each counts both classes.
fn two_classes_running_until(to_ms: u64) -> (Registry, Flow, Flow) {
    let mut reg = Registry::new();
    let mut a = Flow::new(10_000);
    let mut b = Flow::new(50_000);
    assert_eq!(run_both(&mut reg, &mut a, &mut b, 10, to_ms, 10), (2, 2));
    (reg, a, b)
}

/// Three flows of these minRTTs, each running its first round in turn from
/// 1 ms on; each one's Wfcount.
fn joined(min_rtts: [u32; 3]) -> (Registry, [Flow; 3], [u32; 3]) {
    let mut reg = Registry::new();
    let mut flows = min_rtts.map(Flow::new);
    let mut counts = [0; 3];
    for (i, f) in flows.iter_mut().enumerate() {
        counts[i] = reg.round(f, MS + i as u64);
    }
    (reg, flows, counts)
}

/// The reviewer's case (session 15, finding 1): A in the 10 ms class, B in
/// the 50 ms class; A is idle for 1.5 s (longer than window_ms) while B goes
/// on; when A resumes it takes its own stale slot back, and both count 2
/// from A's first round on, every round. Before the fix, A's claim of its
/// own slot left it again (last_seen_ns 0) and both counted 1 for good.
#[test]
fn a_flow_resuming_after_an_idle_period_counts_its_class_again() {
    let (mut reg, mut a, mut b) = two_classes_running_until(200);
    let a_slot = a.m.slot;

    // A idle: its class goes stale and B stops counting it.
    let mut t = 200;
    let mut cb = 0;
    while t < 1700 {
        cb = reg.round(&mut b, t * MS);
        t += 10;
    }
    assert_eq!(cb, 1, "A's class is stale after window_ms");

    // A resumes.
    for round in 0..20 {
        let now = (1700 + 10 * round) * MS;
        assert_eq!(reg.round(&mut a, now), 2, "A's round {round}");
        assert_eq!(reg.round(&mut b, now + 1), 2, "B's round {round}");
        let s = reg.slot_of(&a);
        assert_eq!(a.m.slot, a_slot, "A took back its own slot");
        assert_eq!(s.last_seen_ns, now, "A's slot refreshed, not left");
        assert_eq!(s.flows, 1, "A is its slot's one member");
    }
}

/// A flow whose own slot is stale but not the first free one claims the
/// free one and leaves its old slot; the old slot was not counted (stale),
/// so the round's count keeps both classes. Before the fix the count lost
/// one for the uncounted old slot.
#[test]
fn leaving_a_stale_slot_does_not_lower_the_count() {
    // X in slot 0, A in slot 1, C in slot 2.
    let (mut reg, [mut x, mut a, mut c], counts) = joined([80_000, 10_000, 100_000]);
    assert_eq!(counts[2], 3);
    assert!(reg.leave(&mut x), "X was slot 0's last member");
    assert_eq!(
        reg.slots[0].last_seen_ns, 0,
        "an emptied class stops counting"
    );

    // A idle past the window while C goes on.
    let mut t = 10;
    while t < 1600 {
        assert!(reg.round(&mut c, t * MS) >= 1);
        t += 10;
    }
    let old = a.m.slot as usize;
    assert_eq!(reg.round(&mut a, 1600 * MS), 2, "A and C");
    assert_eq!(a.m.slot, 0, "A claimed the first free slot");
    assert_eq!(reg.slots[old].flows, 0, "A left its old slot");
    assert_eq!(reg.round(&mut c, 1600 * MS + 1), 2);
}

/// A stale slot claimed for another class belongs to that class: a former
/// member's leave, or its move to another slot, changes nothing there, and
/// `flows` never wraps. Before the fix the former member's leave zeroed the
/// new class's slot (flows 1 -> 0), so other flows stopped counting it.
#[test]
fn a_former_member_does_not_touch_a_reclaimed_slot() {
    // A2 is in A's class (within 10 %).
    let (mut reg, [mut a, mut a2, mut b], _) = joined([10_000, 10_500, 50_000]);
    assert_eq!(a.m.slot, a2.m.slot);
    let shared = a.m.slot as usize;
    assert_eq!(reg.slots[shared].flows, 2);

    // A and A2 idle past the window; D (30 ms) claims their stale slot.
    let mut d = Flow::new(30_000);
    for t in (100..=1500).step_by(100) {
        reg.round(&mut b, t * MS);
    }
    assert_eq!(reg.round(&mut b, 1500 * MS), 1);
    assert_eq!(reg.round(&mut d, 1500 * MS + 1), 2, "B and D");
    assert_eq!(d.m.slot as usize, shared);
    assert_eq!(reg.slots[shared].flows, 1);

    // A's connection closes: D's slot is not A's class any more.
    assert!(!reg.leave(&mut a));
    assert_eq!(reg.slots[shared].flows, 1);
    assert_ne!(reg.slots[shared].last_seen_ns, 0);
    assert_eq!(reg.round(&mut b, 1510 * MS), 2, "B still counts D");

    // A2 resumes: its class is gone, it claims a slot of its own and leaves
    // D's untouched.
    assert_eq!(reg.round(&mut a2, 1520 * MS), 3, "A2, B and D");
    assert_ne!(a2.m.slot as usize, shared);
    assert_eq!(reg.slots[shared].flows, 1);
    assert_eq!(reg.round(&mut d, 1530 * MS), 3);
}

/// Members of one class: the class counts once, and stops counting when its
/// last member leaves, not before.
#[test]
fn a_class_counts_once_and_until_its_last_member_leaves() {
    let (mut reg, [mut a, mut a2, mut b], counts) = joined([10_000, 9_500, 50_000]);
    assert_eq!(counts[2], 2, "two classes, three flows");
    assert!(!reg.leave(&mut a), "A2 is still a member");
    assert_eq!(reg.round(&mut b, 10 * MS), 2);
    assert!(reg.leave(&mut a2));
    assert_eq!(
        reg.round(&mut b, 20 * MS),
        1,
        "gone at once, not after the window"
    );
    assert!(!reg.leave(&mut a2), "leaving twice is a no-op");
}

/// A flow whose minRTT moves to another class moves its membership: the old
/// class, if it was its last member, stops counting in the same round.
#[test]
fn a_flow_changing_class_counts_in_one_class_only() {
    let (mut reg, mut a, mut b) = two_classes_running_until(50);
    let old = a.m.slot as usize;
    a.min_rtt_us = 49_000; // B's class now
    assert_eq!(reg.round(&mut a, 60 * MS), 1);
    assert_eq!(a.m.slot, b.m.slot);
    assert_eq!(reg.slots[old].last_seen_ns, 0);
    assert_eq!(reg.slot_of(&b).flows, 2);
    assert_eq!(reg.round(&mut b, 60 * MS + 1), 1);
}
