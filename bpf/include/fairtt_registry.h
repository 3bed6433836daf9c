/* SPDX-License-Identifier: GPL-2.0 */
/*
 * FaiRTT's host-wide registry of minRTT classes (Wfcount, Alg. 1 line 4):
 * the slot-state transitions, apart from the map lookups.
 *
 * fairtt.bpf.c looks the slots up in FAIRTT_REGISTRY_MAP and hands the
 * pointers to these functions; loader/tests/fairtt_registry.rs runs the very
 * same functions, compiled for the host (bpf/host/math_host.c), over a plain
 * array of slots, so every transition is tested without a kernel.
 *
 * Once per round trip a flow scans every slot (fairtt_scan_visit: count the
 * active slots in its scope, note its own class and the first free slot),
 * then fairtt_scan_finish refreshes its class:
 * - its class is active in slot `mine`: refresh it, and move there if the
 *   flow was a member of another slot;
 * - else it claims the first free (inactive) slot for its class. A slot that
 *   is the flow's own, gone stale (idle or backed off past window_ms) and
 *   still of its class is taken back as it is: refreshed, members kept.
 * A slot's `flows` counts its members, best effort; the class stops counting
 * at once when its last member leaves. A flow remembers the class it joined
 * (struct fairtt_member), and leaves a slot only while the slot still holds
 * that class: once a stale slot is claimed for another class, its old
 * members are no longer counted in it and leave nothing there. The round's
 * count drops by one for an emptied old slot only if the scan counted it.
 */
#ifndef RTTFAIR_FAIRTT_REGISTRY_H
#define RTTFAIR_FAIRTT_REGISTRY_H

#include "rf_types.h"
#include "rttfair_abi.h"
#include "fairtt_math.h"

#define FAIRTT_NO_SLOT 0xff

_Static_assert(FAIRTT_REGISTRY_SLOTS <= 64, "the scan's active mask has 64 bits");
_Static_assert(FAIRTT_REGISTRY_SLOTS <= 127, "a slot number must fit fairtt_scan.mine");

/* A flow's membership: its slot, and the class the slot held when the flow
 * joined or claimed it (so that it can tell whether it still does). */
struct fairtt_member {
	__u32 min_rtt_us;
	__u32 scope_id;
	__u8 slot;                     /* FAIRTT_NO_SLOT: none */
};

/*
 * State of one pass over the registry (a bpf_loop callback's context in
 * the BPF program). Active slots are collected as a bit mask, not counted:
 * a counter would give the verifier a new exact value per iteration and it
 * would walk every combination of the 32 iterations instead of converging.
 * The slot numbers and the scope flag are bytes (slots <
 * FAIRTT_REGISTRY_SLOTS): the whole is 48 bytes of the caller's frame.
 */
struct fairtt_scan {
	__u64 now, window_ns;
	__u64 active;          /* bit i: slot i active (and in scope) */
	__u64 free_seen;       /* last_seen_ns of the free slot, for the claim */
	__u32 min_rtt_us, tol_pct;
	__u32 scope_id;        /* this flow's namespace or address */
	__s8 mine, free;       /* our class's slot, the first free one; -1: none */
	__u8 scoped;           /* 1: count only slots of scope_id */
};

RF_INLINE bool fairtt_slot_active(const struct fairtt_slot *s, __u64 now, __u64 window_ns)
{
	return s->last_seen_ns && now - s->last_seen_ns <= window_ns;
}

RF_INLINE __u32 fairtt_popcount(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((x * 0x0101010101010101ULL) >> 56);
}

RF_INLINE void fairtt_scan_init(struct fairtt_scan *sc, __u64 now, __u64 window_ns,
				__u32 min_rtt_us, __u32 tol_pct, __u32 scope_id, bool scoped)
{
	sc->now = now;
	sc->window_ns = window_ns;
	sc->active = 0;
	sc->free_seen = 0;
	sc->min_rtt_us = min_rtt_us;
	sc->tol_pct = tol_pct;
	sc->scope_id = scope_id;
	sc->mine = -1;
	sc->free = -1;
	sc->scoped = scoped;
}

/* One slot: count it if active, note the first free slot and our class. */
RF_INLINE void fairtt_scan_visit(struct fairtt_scan *sc, __u32 key, const struct fairtt_slot *s)
{
	if (!fairtt_slot_active(s, sc->now, sc->window_ns)) {
		if (sc->free < 0) {
			sc->free = key;
			sc->free_seen = s->last_seen_ns;
		}
		return;
	}
	/* Another scope's class: neither counted nor joined (nor free: it is
	 * that scope's). */
	if (sc->scoped && s->scope_id != sc->scope_id)
		return;
	sc->active |= 1ULL << (key & 63);
	if (sc->mine < 0 && fairtt_same_class(s->min_rtt_us, sc->min_rtt_us, sc->tol_pct))
		sc->mine = key;
}

/* Whether slot s still holds the class m joined there. */
RF_INLINE bool fairtt_slot_holds(const struct fairtt_slot *s, const struct fairtt_member *m)
{
	return s->min_rtt_us == m->min_rtt_us && s->scope_id == m->scope_id;
}

/*
 * Leave m's slot s (NULL: not found). The flows count drops only while s
 * still holds m's class, and never below 0; the class stops counting at
 * once if m was its last member. Returns true if it emptied the slot.
 */
RF_INLINE bool fairtt_leave_slot(struct fairtt_slot *s, struct fairtt_member *m)
{
	bool emptied = false;

	if (s && m->slot != FAIRTT_NO_SLOT && fairtt_slot_holds(s, m)) {
		__u32 before = __sync_fetch_and_add(&s->flows, -1);

		if (before == 1) {
			s->last_seen_ns = 0;
			emptied = true;
		} else if (before == 0) {
			__sync_fetch_and_add(&s->flows, 1); /* already empty */
		}
	}
	m->slot = FAIRTT_NO_SLOT;
	return emptied;
}

/* Leave m's old slot on the way to another; the count loses the old class
 * only if the scan counted it and this emptied it. */
RF_INLINE __u32 fairtt_move_out(const struct fairtt_scan *sc, struct fairtt_slot *old,
				struct fairtt_member *m, __u32 count)
{
	bool counted = m->slot != FAIRTT_NO_SLOT && ((sc->active >> (m->slot & 63)) & 1);

	if (fairtt_leave_slot(old, m) && counted && count > 0)
		count--;
	return count;
}

RF_INLINE void fairtt_member_set(struct fairtt_member *m, __u32 key, const struct fairtt_slot *s)
{
	m->slot = key;
	m->min_rtt_us = s->min_rtt_us;
	m->scope_id = s->scope_id;
}

/*
 * After the scan: refresh this flow's class and return Wfcount (at least 1,
 * its own class). `target` is slot sc->mine if the scan found the class,
 * else slot sc->free (NULL: neither, or not found); `old` is the flow's
 * current slot m->slot when that is another slot (else NULL).
 */
RF_INLINE __u32 fairtt_scan_finish(const struct fairtt_scan *sc, struct fairtt_slot *target,
				   struct fairtt_slot *old, struct fairtt_member *m)
{
	__u32 count = fairtt_popcount(sc->active), key;

	if (sc->mine >= 0) {
		key = (__u32)sc->mine;
		if (target) {
			target->last_seen_ns = sc->now;
			if (m->slot != key || !fairtt_slot_holds(target, m)) {
				/* Joins (or changed class, e.g. RTprop re-sampled):
				 * a flow counts in one class only. */
				if (m->slot != key)
					count = fairtt_move_out(sc, old, m, count);
				__sync_fetch_and_add(&target->flows, 1);
				fairtt_member_set(m, key, target);
			}
		}
	} else if (sc->free >= 0) {
		key = (__u32)sc->free;
		/* Claim the slot by moving its last_seen_ns from the value the
		 * scan saw to now: of flows on other CPUs racing for it, one wins.
		 * A loser's class is active all the same (the winner shares it or
		 * holds another); it counts it now and joins a slot next round. */
		if (target && __sync_val_compare_and_swap(&target->last_seen_ns, sc->free_seen,
							  sc->now) == sc->free_seen) {
			bool own = m->slot == key && fairtt_slot_holds(target, m) &&
				   target->scope_id == sc->scope_id &&
				   fairtt_same_class(target->min_rtt_us, sc->min_rtt_us,
						     sc->tol_pct);

			/* Our own stale slot, still of our class: the CAS has
			 * refreshed it; its members stay. Otherwise a new class. */
			if (!own) {
				if (m->slot != key)
					count = fairtt_move_out(sc, old, m, count);
				target->min_rtt_us = sc->min_rtt_us;
				target->scope_id = sc->scope_id;
				target->flows = 1;
				fairtt_member_set(m, key, target);
			}
		}
		count++;
	}
	return count ? count : 1;
}

#endif /* RTTFAIR_FAIRTT_REGISTRY_H */
