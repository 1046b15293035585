//! The ready queue: jobs waiting for a device, in policy order.
//!
//! Jobs live in a slab; heaps hold `(key, seq, slot, generation)` entries and
//! removal is lazy (an entry whose slot generation moved on is skipped when it
//! surfaces). Jobs are grouped by their eligible device set (and under `fair`
//! also by model), so finding the best job for a set of free devices peeks one
//! heap top per group — there are as many groups as distinct eligibility sets
//! (times models, under `fair`), usually a few, not jobs.
//!
//! Keys are static, so every operation is O(log n):
//! - order key: `fifo`/`limit` arrival; `sjf`/`fair`/`lanes` `cost + α·arrival`; `edf` deadline;
//! - urgency key (`sjf`/`fair`/`lanes` with slack, jobs with a target): latest start `target − cost`
//!   (an entry leaves for good once `now` passes it);
//! - starving key (`sjf`/`fair`/`lanes` with `starve`): the arrival, so the
//!   top is the group's oldest job and whether it has waited `starve` is
//!   tested on the top alone;
//! - short key (`lanes`, jobs of cost at most `fast`): the order key, in a
//!   heap of its own, so the fast lane finds the best short job at once
//!   (with a fast-lane gate: the arrival, so the top is the oldest and the
//!   gate, a cutoff on arrival, is tested on the top alone);
//! - drop key (jobs with a deadline): the last instant the job may still be
//!   dispatched — `deadline`, or `deadline − cost` under `edf`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::share::Shares;
use crate::{DeviceSet, Job, JobId, ModelId, Nanos, Policy};

/// A heap entry: smallest key first, then submission order.
type Entry = Reverse<(u64, u64, u32, u32)>;

#[derive(Debug)]
struct Slot {
    generation: u32,
    group: u32,
    job: Option<Job>,
}

#[derive(Debug)]
struct Group {
    devices: DeviceSet,
    /// Under `fair`, the model's slot in [`Shares`]; otherwise 0 for all.
    share: u32,
    live: usize,
    order: BinaryHeap<Entry>,
    urgent: BinaryHeap<Entry>,
    /// (`starve`) every job, by arrival.
    starving: BinaryHeap<Entry>,
    /// (`lanes`) short jobs only, in order-key order.
    short: BinaryHeap<Entry>,
}

/// Which heap of a group a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// (`starve`) a job that has waited at least `starve`.
    Starving = 0,
    Urgent = 1,
    Normal = 2,
    /// (`fair`) a job of a model ahead of its share.
    Yielding = 3,
}

/// The best job a group offers right now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    pub class: Class,
    pub key: (u64, u64),
    pub slot: u32,
    pub devices: DeviceSet,
}

/// Jobs waiting for a device.
#[derive(Debug)]
pub(crate) struct ReadyQueue {
    policy: Policy,
    slots: Vec<Slot>,
    free: Vec<u32>,
    index: FxHashMap<JobId, u32>,
    groups: Vec<Group>,
    expiry: BinaryHeap<Entry>,
    seq: u64,
    /// `fair` only: per-model deficit counters.
    shares: Option<Shares>,
    /// (fast-lane gate with `burst`) long jobs by arrival.
    long: BinaryHeap<Entry>,
}

impl ReadyQueue {
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            slots: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            groups: Vec::new(),
            expiry: BinaryHeap::new(),
            seq: 0,
            shares: match policy {
                Policy::Fair {
                    threshold,
                    cap,
                    usage,
                    ..
                } => Some(Shares::new(threshold, cap, usage)),
                _ => None,
            },
            long: BinaryHeap::new(),
        }
    }

    /// A job of `model` finished after holding its slot for `held`.
    pub fn finished(&mut self, model: ModelId, held: Nanos) {
        if let Some(shares) = &mut self.shares {
            shares.finished(model, held);
        }
    }

    /// (`fair`) the deficit of `model`: device time owed (> 0) or taken
    /// beyond its share (< 0).
    pub fn deficit(&self, model: ModelId) -> Option<i64> {
        self.shares.as_ref().map(|s| s.deficit(model))
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn contains(&self, id: JobId) -> bool {
        self.index.contains_key(&id)
    }

    fn order_key(&self, job: &Job) -> u64 {
        match self.policy {
            Policy::Fifo | Policy::Limit(_) => job.arrival,
            Policy::Edf => job.deadline.unwrap_or(u64::MAX),
            // Non-negative finite floats order like their bit patterns.
            Policy::Sjf { alpha, .. }
            | Policy::Fair { alpha, .. }
            | Policy::Lanes { alpha, .. } => {
                (job.cost as f64 + alpha * job.arrival as f64).to_bits()
            }
        }
    }

    fn drop_key(&self, job: &Job) -> Option<Nanos> {
        let deadline = job.deadline?;
        Some(match self.policy {
            Policy::Edf => deadline.saturating_sub(job.cost),
            _ => deadline,
        })
    }

    /// Adds a job (the caller has checked its id is new).
    pub fn push(&mut self, job: Job) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    group: 0,
                    job: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let generation = self.slots[slot as usize].generation;
        self.seq += 1;
        let seq = self.seq;
        let order = self.order_key(&job);
        let urgent = match (self.policy.shortest_first(), job.target) {
            (Some((_, Some(_))), Some(t)) => Some(t.saturating_sub(job.cost)),
            _ => None,
        };
        if let Some(at) = self.drop_key(&job) {
            self.expiry.push(Reverse((at, seq, slot, generation)));
        }
        let share = match &mut self.shares {
            Some(shares) => {
                shares.queued(job.model);
                shares.slot(job.model)
            }
            None => 0,
        };
        let found = self
            .groups
            .iter()
            .position(|g| g.devices == job.devices && g.share == share);
        let g = match found {
            Some(g) => g,
            None => {
                self.groups.push(Group {
                    devices: job.devices,
                    share,
                    live: 0,
                    order: BinaryHeap::new(),
                    urgent: BinaryHeap::new(),
                    starving: BinaryHeap::new(),
                    short: BinaryHeap::new(),
                });
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[g];
        group.live += 1;
        group.order.push(Reverse((order, seq, slot, generation)));
        if let Some(latest_start) = urgent {
            group
                .urgent
                .push(Reverse((latest_start, seq, slot, generation)));
        }
        if self.policy.starve().is_some() {
            group
                .starving
                .push(Reverse((job.arrival, seq, slot, generation)));
        }
        if self.policy.fast_lane().is_some_and(|fast| job.cost <= fast) {
            let key = if self.policy.fast_gate().is_open() {
                order
            } else {
                job.arrival
            };
            group.short.push(Reverse((key, seq, slot, generation)));
        }
        let gate = self.policy.fast_gate();
        if gate.burst.is_some() && self.policy.fast_lane().is_some_and(|fast| job.cost > fast) {
            self.long
                .push(Reverse((job.arrival, seq, slot, generation)));
        }
        self.index.insert(job.id, slot);
        let s = &mut self.slots[slot as usize];
        s.group = g as u32;
        s.job = Some(job);
    }

    /// (`fair`) forgets the deficits of models that went idle; call before
    /// choosing.
    pub fn settle(&mut self) {
        if let Some(shares) = &mut self.shares {
            shares.settle();
        }
    }

    /// Removes the job in `slot` to run it now.
    pub fn start(&mut self, slot: u32) -> Job {
        let job = self.remove(slot);
        if let Some(shares) = &mut self.shares {
            shares.started(job.model);
        }
        job
    }

    /// Removes the job in `slot` for good (dropped or cancelled).
    fn take(&mut self, slot: u32) -> Job {
        let job = self.remove(slot);
        if let Some(shares) = &mut self.shares {
            shares.unqueued(job.model);
        }
        job
    }

    fn remove(&mut self, slot: u32) -> Job {
        let s = &mut self.slots[slot as usize];
        let job = s.job.take().expect("take: slot holds a live job");
        s.generation = s.generation.wrapping_add(1);
        self.free.push(slot);
        self.index.remove(&job.id);
        self.groups[s.group as usize].live -= 1;
        job
    }

    /// Removes a queued job by id.
    pub fn cancel(&mut self, id: JobId) -> Option<Job> {
        let slot = *self.index.get(&id)?;
        Some(self.take(slot))
    }

    fn is_live(slots: &[Slot], entry: &Entry) -> bool {
        let Reverse((_, _, slot, generation)) = *entry;
        let s = &slots[slot as usize];
        s.generation == generation && s.job.is_some()
    }

    /// Removes and returns the next job whose drop instant is before `now`.
    pub fn pop_expired(&mut self, now: Nanos) -> Option<Job> {
        while let Some(&Reverse((at, _, slot, _))) = self.expiry.peek() {
            if at >= now {
                return None;
            }
            let entry = self.expiry.pop().expect("peeked");
            if Self::is_live(&self.slots, &entry) {
                return Some(self.take(slot));
            }
        }
        None
    }

    /// The best job eligible for at least one device in `free`, if any.
    ///
    /// Starving jobs (waited at least `starve`; any model, ahead of its
    /// share or not) beat urgent ones, urgent jobs (slack at most the margin)
    /// beat normal ones, and normal ones beat those of a model ahead of its
    /// share (`fair`; such jobs are never urgent); within a class the smaller
    /// key wins (for starving jobs the arrival: oldest first), then the
    /// earlier submission.
    pub fn best(&mut self, free: DeviceSet, now: Nanos) -> Option<Candidate> {
        let margin = self.policy.shortest_first().and_then(|(_, slack)| slack);
        let starve = self.policy.starve();
        let slots = &self.slots;
        let shares = self.shares.as_ref();
        let mut best: Option<Candidate> = None;
        for group in &mut self.groups {
            if group.live == 0 || group.devices.intersect(free).is_empty() {
                continue;
            }
            let yielding = shares.is_some_and(|s| s.ahead(group.share));
            let mut candidate = None;
            if let Some(starve) = starve {
                // The group's oldest job is its first to starve.
                while let Some(top) = group.starving.peek() {
                    if Self::is_live(slots, top) {
                        let Reverse((arrival, seq, slot, _)) = *top;
                        if now.saturating_sub(arrival) >= starve {
                            candidate = Some((Class::Starving, (arrival, seq), slot));
                        }
                        break;
                    }
                    group.starving.pop();
                }
            }
            if let (Some(margin), false, None) = (margin, yielding, candidate) {
                // Entries past their latest start can no longer make their
                // target: they leave the urgent heap for good (the job stays
                // in the order heap, behind any urgent job; with `starve` the
                // starving heap bounds its wait).
                while let Some(top) = group.urgent.peek() {
                    let Reverse((latest_start, seq, slot, _)) = *top;
                    if Self::is_live(slots, top) && latest_start >= now {
                        if latest_start <= now.saturating_add(margin) {
                            candidate = Some((Class::Urgent, (latest_start, seq), slot));
                        }
                        break;
                    }
                    group.urgent.pop();
                }
            }
            if candidate.is_none() {
                while let Some(top) = group.order.peek() {
                    if Self::is_live(slots, top) {
                        let Reverse((key, seq, slot, _)) = *top;
                        let class = if yielding {
                            Class::Yielding
                        } else {
                            Class::Normal
                        };
                        candidate = Some((class, (key, seq), slot));
                        break;
                    }
                    group.order.pop();
                }
            }
            // Keep the fast lane's heap free of entries already gone (the
            // order heap is cleaned the same way as its tops surface).
            while group
                .short
                .peek()
                .is_some_and(|top| !Self::is_live(slots, top))
            {
                group.short.pop();
            }
            let Some((class, key, slot)) = candidate else {
                continue;
            };
            let better = match &best {
                None => true,
                Some(b) => (class, key) < (b.class, b.key),
            };
            if better {
                best = Some(Candidate {
                    class,
                    key,
                    slot,
                    devices: group.devices,
                });
            }
        }
        best
    }

    /// (fast-lane gate with `burst`) the earliest arrival of a queued long
    /// job, if any.
    pub fn oldest_long(&mut self) -> Option<Nanos> {
        while let Some(top) = self.long.peek() {
            if Self::is_live(&self.slots, top) {
                return Some(top.0 .0);
            }
            self.long.pop();
        }
        None
    }

    /// (`lanes`) the best short job (aging order; with a gate, oldest first)
    /// eligible for at least one device in `open` (devices with an open fast
    /// slot) on which `admit(arrival, devices)` lets it in (`Ok`: those
    /// devices, non-empty), if any; the candidate's devices are those. Also
    /// the earliest instant at which a group's best short job that `admit`
    /// held back (`Err(instant)`) is let in, if any.
    pub fn best_short(
        &mut self,
        open: DeviceSet,
        admit: impl Fn(Nanos, DeviceSet) -> Result<DeviceSet, Nanos>,
    ) -> (Option<Candidate>, Option<Nanos>) {
        let slots = &self.slots;
        let mut best: Option<Candidate> = None;
        let mut held: Option<Nanos> = None;
        for group in &mut self.groups {
            let reachable = group.devices.intersect(open);
            if group.live == 0 || reachable.is_empty() {
                continue;
            }
            while let Some(top) = group.short.peek() {
                if Self::is_live(slots, top) {
                    let Reverse((key, seq, slot, _)) = *top;
                    let arrival = slots[slot as usize].job.as_ref().map_or(0, |j| j.arrival);
                    match admit(arrival, reachable) {
                        Err(at) => held = Some(held.map_or(at, |h| h.min(at))),
                        Ok(devices) if best.is_none_or(|b| (key, seq) < b.key) => {
                            best = Some(Candidate {
                                class: Class::Normal,
                                key: (key, seq),
                                slot,
                                devices,
                            });
                        }
                        Ok(_) => {}
                    }
                    break;
                }
                group.short.pop();
            }
        }
        (best, held)
    }
}
