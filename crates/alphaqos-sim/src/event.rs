//! The event queue: a binary heap ordered by (time, insertion sequence), so
//! that events at the same instant run in the order they were scheduled and
//! a run is reproducible bit for bit.

use crate::conn::{ConnId, GEN_BITS};
use crate::time::SimTime;

/// What happens when an event fires. Kept small: packets in flight live in
/// the links' propagation pipes, not in the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An interface finished serializing a frame (or a shaper's hold
    /// expired) and may start the next.
    TxDone(u32),
    /// The head packet of an interface's propagation pipe reaches the far end.
    Deliver(u32),
    /// A connection's timer; its application interprets the kind. Stale
    /// (the connection ended) when the id's generation is not the slot's.
    Conn(ConnId, FlowTimer),
    /// A workload's timer: (workload index, its argument: the source host
    /// of an ON/OFF workload, else 0).
    Workload(u32, u32),
    /// Record a row of every metric series.
    Sample,
    /// A control agent's timer (its index): see `control/`.
    Agent(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FlowTimer {
    Start,
    Stop,
    /// Next packet of a generator (CBR, Poisson, ping), or the next write
    /// of an application-limited TCP sender.
    Send,
    /// A rate step of a CBR schedule begins.
    Step,
    /// TCP retransmission timer.
    Rto,
    /// TCP delayed-ACK timer.
    DelAck,
    /// Room again in the host's interface queue (TSQ-like back-pressure).
    Wake,
    /// The pacing gap of a TCP sender has passed.
    Pace,
    /// RACK's reordering window of a hole has passed.
    Rack,
    /// The receiving host's NIC interrupt: a NAPI poll (`tcp/gro.rs`).
    Napi,
}

/// Events travel the heap packed in one word (see [`Event::encode`]): one
/// store and one load of 8 bytes each, where an enum of separately written
/// fields would stall the processor's store-to-load forwarding when the heap
/// reads the entry back whole (it cost a third of the speed of the
/// single-flow benchmark).
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    code: u64,
}

const KIND_SHIFT: u32 = 61;
const TIMER_SHIFT: u32 = 56;
const GEN_SHIFT: u32 = 32;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const TIMERS: [FlowTimer; 10] = [
    FlowTimer::Start,
    FlowTimer::Stop,
    FlowTimer::Send,
    FlowTimer::Step,
    FlowTimer::Rto,
    FlowTimer::DelAck,
    FlowTimer::Wake,
    FlowTimer::Pace,
    FlowTimer::Rack,
    FlowTimer::Napi,
];

impl Event {
    /// Kind in bits 61..64; for a connection the timer in 56..61, the
    /// generation in 32..56 and the slot in 0..32; for a workload its index
    /// in 32..56 and the argument in 0..32; else the index in 0..32.
    #[inline(always)]
    pub fn encode(self) -> u64 {
        let kind = |k: u64| k << KIND_SHIFT;
        match self {
            Event::TxDone(i) => kind(0) | i as u64,
            Event::Deliver(i) => kind(1) | i as u64,
            Event::Conn(id, t) => {
                debug_assert!((id.gen as u64) <= GEN_MASK);
                kind(2) | (t as u64) << TIMER_SHIFT | (id.gen as u64 & GEN_MASK) << GEN_SHIFT | id.idx as u64
            }
            Event::Workload(w, arg) => {
                debug_assert!((w as u64) <= GEN_MASK);
                kind(3) | (w as u64 & GEN_MASK) << GEN_SHIFT | arg as u64
            }
            Event::Sample => kind(4),
            Event::Agent(a) => kind(5) | a as u64,
        }
    }

    #[inline(always)]
    pub fn decode(code: u64) -> Event {
        let low = code as u32;
        let mid = ((code >> GEN_SHIFT) & GEN_MASK) as u32;
        match code >> KIND_SHIFT {
            0 => Event::TxDone(low),
            1 => Event::Deliver(low),
            2 => Event::Conn(ConnId::new(low, mid), TIMERS[((code >> TIMER_SHIFT) & 0x1f) as usize]),
            3 => Event::Workload(mid, low),
            4 => Event::Sample,
            _ => Event::Agent(low),
        }
    }
}

impl Entry {
    /// Earlier time first, then earlier insertion: compared as one 128-bit
    /// number, without a branch between the two fields.
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time.0 as u128) << 64 | self.seq as u128
    }
    #[inline(always)]
    fn before(&self, o: &Entry) -> bool {
        self.key() < o.key()
    }
}

/// Sequence numbers of ordinary events start here; those below are the
/// ranks of [`EventQueue::schedule_first`].
const FIRST_SEQ: u64 = 1 << 32;
/// Children per node of the heap.
const ARITY: usize = 4;

/// A 4-ary min-heap on (time, seq) (D. B. Johnson, "Priority queues with
/// update and finding minimum spanning trees", IPL 4(3), 1975; LaMarca and
/// Ladner, "The influence of caches on the performance of heaps", JEA 1996).
/// Half the levels of a binary heap: most new events (a transmission's end,
/// the next arrival) are the earliest in the queue and climb every level to
/// the root, and a pop walks every level down; with four children a level
/// costs three comparisons more but one move fewer per two levels saved.
/// Written out rather than `std::collections::BinaryHeap`, whose push writes
/// the new entry and reads it back at once; here the entry moving up or down
/// stays in registers and is written once, where it lands.
#[derive(Debug, Default)]
struct Heap(Vec<Entry>);

impl Heap {
    #[inline(always)]
    fn push(&mut self, e: Entry) {
        let (time, seq) = (e.time, e.seq);
        let h = &mut self.0;
        let mut i = h.len();
        h.push(Entry { time, seq, code: 0 });
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !e.before(&h[parent]) {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = e;
    }

    /// The earliest entry's key (u128::MAX if empty).
    #[inline(always)]
    fn first_key(&self) -> u128 {
        self.0.first().map_or(u128::MAX, Entry::key)
    }

    /// The earliest entry, left in place (see [`EventQueue`]'s taken entry).
    #[inline(always)]
    fn top(&self) -> Option<Entry> {
        self.0.first().copied()
    }

    /// Remove the earliest entry.
    #[inline(always)]
    fn remove_top(&mut self) {
        if let Some(last) = self.0.pop() {
            if !self.0.is_empty() {
                self.sift_down(last);
            }
        }
    }

    /// Fill the root's place with `e`: at each level the earliest of up to
    /// four children moves up, until `e` is earlier. On a taken root this
    /// removes it and inserts `e` in one walk down (a pop and a push without
    /// the push's climb).
    #[inline(always)]
    fn sift_down(&mut self, e: Entry) {
        let h = &mut self.0;
        let n = h.len();
        let key = e.key();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let (ck, c) = if first + ARITY <= n {
                // All four children: a tournament of three comparisons.
                let k = |j: usize| (h[j].key(), j);
                k(first).min(k(first + 1)).min(k(first + 2).min(k(first + 3)))
            } else {
                (first + 1..n).map(|j| (h[j].key(), j)).fold((h[first].key(), first), |a, b| a.min(b))
            };
            if ck >= key {
                break;
            }
            h[i] = h[c];
            i = c;
        }
        h[i] = e;
    }
}

/// The events in two heaps by kind, popped in one order: the links' events
/// (`TxDone`, `Deliver`: a few per interface, mostly due within a
/// propagation delay) apart from the timers of connections, workloads,
/// samples and agents (one or more per open connection, most far ahead).
/// A new link event, nearly always the earliest of all, then climbs a heap
/// of a few entries rather than one holding every connection's timers; a
/// pop takes the earlier of the two heads by (time, seq), the sequence
/// numbers being shared, so the order is the one heap's.
///
/// A popped event stays at its heap's root, *taken*, while it is handled:
/// the first event its handler schedules into the same heap (nearly every
/// link event schedules the next one: a departure's end, the next head
/// of a pipe) replaces it there with one walk down from the root, where a
/// pop then a push would walk down and climb back up. Any other call
/// removes the taken entry first. The queue holds the same entries either
/// way, and (time, seq) keys are unique, so the order is unchanged.
#[derive(Debug)]
pub struct EventQueue {
    links: Heap,
    timers: Heap,
    next_seq: u64,
    /// The heap whose root was popped and is still there (`Some(true)`:
    /// the links' heap), if any.
    taken: Option<bool>,
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue { links: Heap::default(), timers: Heap::default(), next_seq: FIRST_SEQ, taken: None }
    }

    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push(Entry { time, seq, code: event.encode() });
    }

    /// Schedule `event` ahead of every event scheduled with [`Self::schedule`]
    /// at the same instant, in the order of `rank` (< 2^32) among these:
    /// a control agent acts at `t` before anything else happens at `t`, as
    /// a caller stepping the run from outside acts between the events
    /// before `t` and those at `t`.
    pub fn schedule_first(&mut self, time: SimTime, event: Event, rank: u32) {
        self.push(Entry { time, seq: rank as u64, code: event.encode() });
    }

    #[inline(always)]
    fn heap(&mut self, links: bool) -> &mut Heap {
        if links {
            &mut self.links
        } else {
            &mut self.timers
        }
    }

    #[inline(always)]
    fn push(&mut self, e: Entry) {
        // Kinds 0 and 1: TxDone and Deliver (see `Event::encode`).
        let links = e.code >> KIND_SHIFT < 2;
        if self.taken == Some(links) {
            self.taken = None;
            self.heap(links).sift_down(e)
        } else {
            self.heap(links).push(e)
        }
    }

    /// Remove the taken entry, if one is left.
    #[inline(always)]
    fn settle(&mut self) {
        if let Some(links) = self.taken.take() {
            self.heap(links).remove_top();
        }
    }

    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle();
        let k = self.links.first_key().min(self.timers.first_key());
        (k != u128::MAX).then_some(SimTime((k >> 64) as u64))
    }

    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.pop_code().map(|(t, c)| (t, Event::decode(c)))
    }

    /// The next event still packed (decoded where it is dispatched, so the
    /// enum never goes through memory).
    #[inline]
    pub fn pop_code(&mut self) -> Option<(SimTime, u64)> {
        self.pop_code_before(SimTime::MAX, true)
    }

    /// [`Self::pop_code`] if the next event is before `until` (or at it,
    /// if `inclusive`): the event loop's test and pop with one look at the
    /// two heads. The event is taken, not yet removed (see [`EventQueue`]).
    #[inline]
    pub fn pop_code_before(&mut self, until: SimTime, inclusive: bool) -> Option<(SimTime, u64)> {
        self.settle();
        let limit = ((until.0 as u128) << 64).saturating_add((inclusive as u128) << 64);
        let (l, t) = (self.links.first_key(), self.timers.first_key());
        let links = if l < t && l < limit {
            true
        } else if t <= l && t < limit {
            false
        } else {
            return None;
        };
        let e = self.heap(links).top()?;
        self.taken = Some(links);
        Some((e.time, e.code))
    }

    /// Is there an event before `until` (or at it, if `inclusive`)?
    pub fn any_before(&mut self, until: SimTime, inclusive: bool) -> bool {
        self.peek_time().is_some_and(|t| t < until || (t == until && inclusive))
    }

    pub fn len(&self) -> usize {
        self.links.0.len() + self.timers.0.len() - self.taken.is_some() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), Event::TxDone(1));
        q.schedule(SimTime(3), Event::TxDone(2));
        q.schedule(SimTime(5), Event::TxDone(3));
        q.schedule(SimTime(3), Event::TxDone(4));
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![Event::TxDone(2), Event::TxDone(4), Event::TxDone(1), Event::TxDone(3)]);
    }

    #[test]
    fn pops_in_time_then_insertion_order_under_random_interleaving() {
        let mut rng = crate::rng::Rng::stream(9, "heap");
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64)> = Vec::new(); // (time, index)
        let mut now = 0u64;
        let mut next = 0u32;
        let event = |i: u32| match i % 4 {
            0 => Event::TxDone(i),
            1 => Event::Deliver(i),
            2 => Event::Conn(ConnId::new(i, 0), FlowTimer::Rto),
            _ => Event::Workload(0, i),
        };
        for _ in 0..20_000 {
            if rng.uniform() < 0.6 || q.is_empty() {
                // Both heaps: link events and timers, one order.
                let t = now + (rng.uniform() * 50.0) as u64;
                q.schedule(SimTime(t), event(next));
                reference.push((t, next as u64));
                next += 1;
            } else {
                reference.sort();
                let (t, i) = reference.remove(0);
                assert_eq!(q.pop(), Some((SimTime(t), event(i as u32))));
                now = t;
            }
        }
        assert_eq!(q.len(), reference.len());
    }

    #[test]
    fn an_event_scheduled_while_one_is_taken_keeps_the_order() {
        // A popped event stays at its heap's root until the next call; the
        // first event scheduled into that heap replaces it there, whatever
        // its key: later, at the same instant ahead of it (ranked), or in
        // the other heap.
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), Event::TxDone(1));
        q.schedule(SimTime(7), Event::TxDone(2));
        q.schedule(SimTime(9), Event::Sample);
        assert_eq!(q.pop(), Some((SimTime(5), Event::TxDone(1))));
        assert_eq!(q.len(), 2);
        q.schedule_first(SimTime(5), Event::Deliver(3), 0);
        q.schedule(SimTime(6), Event::Deliver(4));
        assert_eq!(q.len(), 4);
        assert_eq!(q.pop(), Some((SimTime(5), Event::Deliver(3))));
        q.schedule(SimTime(8), Event::Agent(0));
        assert_eq!(q.peek_time(), Some(SimTime(6)));
        let rest: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(rest, [Event::Deliver(4), Event::TxDone(2), Event::Agent(0), Event::Sample]);
        assert!(q.is_empty());
    }

    #[test]
    fn ranked_events_come_first_at_their_instant() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), Event::TxDone(1));
        q.schedule(SimTime(4), Event::TxDone(2));
        q.schedule_first(SimTime(5), Event::Agent(1), 1);
        q.schedule_first(SimTime(5), Event::Agent(0), 0);
        q.schedule_first(SimTime(6), Event::Agent(0), 0);
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, [Event::TxDone(2), Event::Agent(0), Event::Agent(1), Event::TxDone(1), Event::Agent(0)]);
    }

    #[test]
    fn every_event_survives_its_encoding() {
        let mut all = vec![Event::TxDone(u32::MAX), Event::Deliver(7), Event::Sample, Event::Agent(0), Event::Agent(u32::MAX), Event::Workload((1 << GEN_BITS) - 1, u32::MAX)];
        for t in TIMERS {
            all.push(Event::Conn(ConnId::new(u32::MAX, (1 << GEN_BITS) - 1), t));
            all.push(Event::Conn(ConnId::new(3, 0), t));
        }
        for e in all {
            assert_eq!(Event::decode(e.encode()), e);
        }
    }
}
