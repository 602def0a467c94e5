//! Connections that come and go: a slab of slots with generation-checked
//! ids.
//!
//! Every flow of a scenario and every connection a workload opens at run
//! time lives in one slot of a [`Slab`]. A slot freed when its connection
//! ends is reused by the next one with its generation raised, so that an
//! event or a packet still in flight for the old connection (a late
//! retransmission, the timer of a finished transfer) is recognised as stale
//! by its [`ConnId`] and ignored, never handed to the newcomer. The scenario's
//! own flows take the first slots, in order, and keep them for the whole
//! run, so that their ids are their indices.

/// Bits of a generation an event carries (`event.rs` packs a [`ConnId`] with
/// its timer into one word); generations wrap at 2^GEN_BITS.
pub const GEN_BITS: u32 = 24;

/// A connection's slot and the generation of its occupant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    pub idx: u32,
    pub gen: u32,
}

impl ConnId {
    pub const fn new(idx: u32, gen: u32) -> ConnId {
        ConnId { idx, gen }
    }
}

struct Slot<T> {
    gen: u32,
    value: Option<T>,
}

/// Slots holding `T`, reused after `remove` with a new generation.
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Store `value`; the lowest freed slot is reused last-in first-out.
    pub fn insert(&mut self, value: T) -> ConnId {
        self.live += 1;
        match self.free.pop() {
            Some(idx) => {
                let s = &mut self.slots[idx as usize];
                // Generations wrap at 2^24: an event carries 24 bits of it.
                s.gen = (s.gen + 1) & ((1 << GEN_BITS) - 1);
                s.value = Some(value);
                ConnId { idx, gen: s.gen }
            }
            None => {
                let idx = u32::try_from(self.slots.len()).expect("fewer than 2^32 connections at once");
                self.slots.push(Slot { gen: 0, value: Some(value) });
                ConnId { idx, gen: 0 }
            }
        }
    }

    /// The occupant of `id`'s slot, if it is still the one `id` names.
    pub fn get(&self, id: ConnId) -> Option<&T> {
        let s = self.slots.get(id.idx as usize)?;
        if s.gen == id.gen {
            s.value.as_ref()
        } else {
            None
        }
    }

    pub fn get_mut(&mut self, id: ConnId) -> Option<&mut T> {
        let s = self.slots.get_mut(id.idx as usize)?;
        if s.gen == id.gen {
            s.value.as_mut()
        } else {
            None
        }
    }

    /// Take the occupant out; the slot is free for the next insert.
    pub fn remove(&mut self, id: ConnId) -> Option<T> {
        let s = self.slots.get_mut(id.idx as usize)?;
        if s.gen != id.gen {
            return None;
        }
        let v = s.value.take()?;
        self.free.push(id.idx);
        self.live -= 1;
        Some(v)
    }

    /// Connections alive now.
    pub fn len(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
    /// Slots ever used (the high-water mark of simultaneous connections).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.value.as_ref().map(|v| (ConnId { idx: i as u32, gen: s.gen }, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_never_reach_a_new_occupant() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!((a, b), (ConnId::new(0, 0), ConnId::new(1, 0)));
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None, "removed twice");
        let c = s.insert("c");
        assert_eq!(c, ConnId::new(0, 1), "slot reused with a new generation");
        assert_eq!(s.get(a), None, "the old id is stale");
        assert_eq!(s.get(c), Some(&"c"));
        assert_eq!(s.len(), 2);
        assert_eq!(s.capacity(), 2);
        let live: Vec<_> = s.iter().map(|(id, v)| (id.idx, *v)).collect();
        assert_eq!(live, [(0, "c"), (1, "b")]);
    }
}
