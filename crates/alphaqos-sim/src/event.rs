//! The event queue: a binary heap ordered by (time, insertion sequence), so
//! that events at the same instant run in the order they were scheduled and
//! a run is reproducible bit for bit.

use crate::conn::ConnId;
use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

#[derive(Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // BinaryHeap is a max-heap: reverse so the earliest (time, seq) is on top.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.cmp(&self.time).then_with(|| o.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn schedule(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, event });
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
