//! Neighbours: the (port, IP) → MAC table of ARP and IPv6 neighbour
//! discovery, as a pure state machine.
//!
//! A route's next hop names a port and an IP address; the data path needs a
//! MAC. [`NeighTable`] is the control side's record of those MACs, in the
//! model Linux operators know (`ip neigh`: INCOMPLETE, REACHABLE, STALE,
//! PROBE, FAILED, PERMANENT). It knows no DPDK type, no thread and no clock:
//! its driver (the control lcore) feeds it packets waiting for resolution
//! ([`hold`](NeighTable::hold)), facts seen on the wire
//! ([`learn`](NeighTable::learn)), operator configuration
//! ([`set_static`](NeighTable::set_static), [`flush`](NeighTable::flush),
//! [`remove_port`](NeighTable::remove_port)) and the time
//! ([`tick`](NeighTable::tick)), and carries out the [`Action`]s it answers
//! with: send a probe, publish or withdraw a MAC, send or answer held packets.
//! It is generic over the held packet `T` (an mbuf in production).
//!
//! # Contract
//!
//! What the table guarantees:
//!
//! - **No packet is lost or duplicated.** Every `T` handed in comes back in
//!   exactly one action ([`Action::Release`], [`Action::Unreachable`],
//!   [`Action::Drop`]) or stays held: packets in always equal packets out
//!   plus [`held`](NeighTable::held). The table never clones a `T` (it does
//!   not require `T: Clone`) nor drops one itself; dropping the table drops
//!   what it holds.
//! - **Publications replay to the table.** Applying the [`Action::Resolved`]
//!   and [`Action::Withdrawn`] actions in order to a map gives, for every
//!   key, exactly the MAC of the entry when it is REACHABLE, STALE, PROBE or
//!   PERMANENT, and no MAC otherwise. `Resolved` is emitted only for a new or
//!   changed MAC, `Withdrawn` only for a published one.
//! - **Held packets follow their MAC.** A `Release` of packets that waited
//!   for resolution comes after the `Resolved` that made them sendable, in
//!   the same batch; its MAC is the published one.
//! - **Bounded, whatever the traffic** (see [Bounds](#bounds-and-why)).
//! - **Deterministic.** Same calls, same actions: ordered maps, no hashing
//!   seeds, time only as the `now_ms` argument.
//! - **Cheap when idle.** A [`tick`](NeighTable::tick) with nothing due is one
//!   comparison; otherwise O(log n) per expired timer.
//!
//! What it expects:
//!
//! - `now_ms` never goes backwards (a monotonic clock in milliseconds), and
//!   `tick` runs often enough for `retrans_ms` to mean something (every
//!   100 ms, say).
//! - Actions are carried out in the order given. Probes and held packets go
//!   out through the control lcore's own TX queue on the port.
//! - The caller classifies what it saw on the wire into a [`Learn`] kind,
//!   and only learns from packets received on `port` for one of its own
//!   addresses (or gratuitous ones).
//!
//! # The state machine
//!
//! `probes` counts the probes sent in the current state. "Usable" means the
//! MAC is published and packets go straight out; Solicited, Unsolicited and
//! Gratuitous are the [`Learn`] kinds. Every timer is (re)started from the
//! `now_ms` of the call that fires it.
//!
//! | State | MAC | Timer, and what its expiry does | Solicited (MAC m) | Unsolicited / Gratuitous (MAC m) | Packet ([`hold`](NeighTable::hold)) |
//! |---|---|---|---|---|---|
//! | *no entry* | – | – | ignored | Unsolicited: STALE(m), Resolved; Gratuitous: ignored | INCOMPLETE, broadcast Probe, packet held |
//! | INCOMPLETE | none | `retrans_ms`: another broadcast Probe while `probes < mcast_probes`, else FAILED, Unreachable(held) | REACHABLE(m), Resolved, Release(held) | STALE(m), Resolved, Release(held) | held (bounded) |
//! | REACHABLE | usable | `reachable_ms` after the confirmation: STALE, no action | REACHABLE, timer restarted; Resolved if m is new | same m: nothing; new m: STALE(m), Resolved | Release at once |
//! | STALE | usable | `delay_ms`: PROBE, unicast Probe to the MAC | REACHABLE(m); Resolved if m is new | same m: nothing; new m: STALE(m), Resolved | Release at once |
//! | PROBE | usable | `retrans_ms`: another unicast Probe while `probes < ucast_probes`, else FAILED, Withdrawn | REACHABLE(m); Resolved if m is new | same m: nothing; new m: STALE(m), Resolved | Release at once |
//! | FAILED | none | `gc_ms` after the failure: forgotten, no action | REACHABLE(m), Resolved | STALE(m), Resolved | Drop within `failed_hold_ms` of the failure; after: INCOMPLETE (probes from 0), broadcast Probe, held |
//! | PERMANENT | usable | none | ignored | ignored | Release at once |
//!
//! The operator's calls: [`set_static`](NeighTable::set_static)`(Some(m))`
//! makes any entry PERMANENT(m) (Resolved if m is new, Release of what it
//! held); `set_static(None)` removes a PERMANENT entry (Withdrawn) and
//! leaves a learned one alone. [`flush`](NeighTable::flush) and
//! [`remove_port`](NeighTable::remove_port) remove learned entries: Withdrawn
//! for the usable ones, Drop for held packets; PERMANENT entries stay
//! (configuration outlives a link flap).
//!
//! # Bounds, and why
//!
//! Held packets are mbufs from the data path's pool, and the RX queues need
//! that pool to receive anything at all, the ARP reply that would end the
//! resolution included. grout held packets in a fixed-size queue per next
//! hop and found ([grout#110]) that the sum of those queues could exceed the
//! pool: traffic to enough unresolved next hops starves the port. The fix
//! its maintainers converged on is the one here: hold the first few packets
//! of a flow for a short while and drop the rest; the endpoints retransmit
//! anyway. So there are three bounds, and every packet refused by one comes
//! back as [`Action::Drop`] for the caller to free and count:
//!
//! - `queue_len` packets per INCOMPLETE entry (Linux `unres_qlen`, but in
//!   packets, not bytes). A flood to one address holds `queue_len`.
//! - `max_held` packets over all entries: the pool is sized against this
//!   number, not against `queue_len` × next hops. A flood to many addresses
//!   holds `max_held`.
//! - `max_entries` learned entries, so that a scan of a connected /16 cannot
//!   grow the table (and the probes it sends) without limit. Past it, the
//!   oldest FAILED entry is evicted (it has neither a MAC nor a packet);
//!   with none, the new entry is refused. Statics do not count: the operator
//!   owns them.
//!
//! When a bound is reached, the entry's own oldest packet makes room for the
//! new one (the freshest packets are the ones worth sending, as in Linux);
//! an entry with none to give drops the new packet. A FAILED entry drops new
//! packets for `failed_hold_ms`, so a stream to a dead host costs one
//! resolution per hold-down, not one per packet; the held packets of a
//! failed resolution come back as [`Action::Unreachable`] so that the
//! sender learns (ICMP host unreachable) instead of timing out.
//!
//! # What differs from Linux, and why
//!
//! - **No DELAY state, and every STALE entry is re-confirmed.** Linux probes
//!   a STALE entry only when it is used again (STALE → DELAY → PROBE). Here
//!   the data path sends with the published MAC and cannot report use
//!   without a shared write per packet, the cost the data path is built to
//!   avoid. So a STALE entry waits `delay_ms` and then probes, used or not:
//!   a few unicast probes per neighbour per `reachable_ms + delay_ms`, and
//!   a neighbour that went away is withdrawn instead of lingering. STALE
//!   plays the part of DELAY.
//! - **A failed re-confirmation withdraws the MAC**, as in Linux with its
//!   default `mcast_resolicit` = 0: PROBE → FAILED after `ucast_probes`.
//!   The next packet after the hold-down starts over with broadcast
//!   probes, which also finds a neighbour that changed MAC silently.
//! - **No randomised reachable time.** Linux draws each entry's
//!   REACHABLE time in [½, 1½] × base; here it is exactly `reachable_ms`,
//!   so that tests can name the millisecond. Entries learned together
//!   re-probe together; the driver paces its TX if that matters.
//! - **Gratuitous facts update INCOMPLETE entries** (to STALE, releasing
//!   held packets), as RFC 4861 §7.2.5 says for an NA; and a Solicited
//!   answer revives a FAILED entry (an answer after we gave up is still an
//!   answer).
//! - **The same MAC without confirmation changes nothing**, as in Linux: an
//!   Unsolicited or Gratuitous fact that repeats the known MAC neither
//!   refreshes the timer nor demotes REACHABLE.
//! - **Bounds are in packets and entries**, global and per entry. Only
//!   FAILED entries are evicted under pressure; Linux's garbage collector
//!   also forgets entries unused for `gc_stale_time`, which this table
//!   cannot tell apart. Here an entry lives as long as its neighbour
//!   answers the re-probes; [`flush`](NeighTable::flush) is the way out.
//!
//! [grout#110]: https://github.com/DPDK/grout/issues/110

mod table;
#[cfg(test)]
mod tests;

pub use table::{Action, EntryView, Learn, NeighConfig, NeighTable, Port, State};
