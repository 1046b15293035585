//! The event queue: the simulation's clock.
//!
//! Events are arrivals (one pending per service), CPU-phase ends, GPU
//! completions, the serving state's wake-ups, background slices, the
//! interpreter lock's hand-overs, threads waking, the time-sliced cores'
//! ends and requests leaving the client for a freed connection. The queue
//! pops them in time order, ties in the order they were scheduled: each
//! push takes the next sequence number, and an event is one packed word. A
//! heap entry compares by its key alone, `time · 2^64 + sequence` as one
//! 128-bit integer (keys are unique, so the packed event never decides),
//! which compiles to a branch-free comparison.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ev {
    Arrival(u8),
    Cpu(u32),
    Gpu(u16, u32),
    Wake,
    /// The next background slice is due (`host.busy_cores`).
    Busy,
    /// The phase that was handed the interpreter lock is awake (`convoy_ms`).
    Lock(u32),
    /// A phase's thread is awake and asks for the lock, or else a core.
    Woken(u32),
    /// The time-sliced cores' earliest end (stale unless the version is
    /// current; `host.time_slicing`).
    Cores(u32),
    /// A batch's device hold is over: its runtime call starts
    /// (`host.device_hold_ms`).
    Held(u32),
    /// A batch's runtime call is off the cores and its preemptions' waits
    /// beyond the cores' are over: its device is free
    /// (`host.call_preempt_absorbed`).
    Preempted(u32),
    /// A request that waited at the client for one of its service's
    /// connections has one now: it reaches the server
    /// (`client_connections`).
    Send(u32),
    /// A core stops (`host.stop_ms`).
    Stop,
    /// The stop in this slot ends (`host.stop_ms`).
    Resume(u32),
}

impl Ev {
    /// Packed into one word for the event heap: kind in the top byte.
    #[inline]
    fn pack(self) -> u64 {
        match self {
            Self::Arrival(s) => u64::from(s),
            Self::Cpu(r) => 1 << 56 | u64::from(r),
            Self::Gpu(g, v) => 2 << 56 | u64::from(g) << 32 | u64::from(v),
            Self::Wake => 3 << 56,
            Self::Busy => 4 << 56,
            Self::Lock(t) => 5 << 56 | u64::from(t),
            Self::Woken(t) => 6 << 56 | u64::from(t),
            Self::Cores(v) => 7 << 56 | u64::from(v),
            Self::Held(slot) => 8 << 56 | u64::from(slot),
            Self::Preempted(slot) => 9 << 56 | u64::from(slot),
            Self::Send(r) => 10 << 56 | u64::from(r),
            Self::Stop => 11 << 56,
            Self::Resume(slot) => 12 << 56 | u64::from(slot),
        }
    }

    #[inline]
    fn unpack(word: u64) -> Self {
        match word >> 56 {
            0 => Self::Arrival(word as u8),
            1 => Self::Cpu(word as u32),
            2 => Self::Gpu((word >> 32) as u16, word as u32),
            3 => Self::Wake,
            4 => Self::Busy,
            5 => Self::Lock(word as u32),
            6 => Self::Woken(word as u32),
            7 => Self::Cores(word as u32),
            8 => Self::Held(word as u32),
            9 => Self::Preempted(word as u32),
            10 => Self::Send(word as u32),
            11 => Self::Stop,
            _ => Self::Resume(word as u32),
        }
    }
}

/// A heap entry: its time, its sequence number and its packed event.
#[derive(Debug, Clone, Copy)]
struct Entry {
    t: u64,
    seq: u64,
    ev: u64,
}

impl Entry {
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.t) << 64 | u128::from(self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl Ord for Entry {
    /// Reversed, so the max-heap pops the earliest (time, sequence) first.
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

impl PartialOrd for Entry {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }

    #[inline]
    fn lt(&self, other: &Self) -> bool {
        other.key() < self.key()
    }

    #[inline]
    fn le(&self, other: &Self) -> bool {
        other.key() <= self.key()
    }
}

/// Pending events, earliest first, ties in schedule order.
#[derive(Debug)]
pub(super) struct EventQueue {
    seq: u64,
    heap: BinaryHeap<Entry>,
}

impl EventQueue {
    #[inline]
    pub(super) fn new() -> Self {
        Self {
            seq: 0,
            heap: BinaryHeap::with_capacity(1024),
        }
    }

    /// Schedules `ev` at `t`, after every event already scheduled at `t`.
    #[inline]
    pub(super) fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev: ev.pack(),
        });
    }

    /// The next event and its time.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|e| (e.t, Ev::unpack(e.ev)))
    }
}
