//! The scheduler: a ready queue, a set of devices, and the dispatch rule.
//!
//! **Work conserving.** [`Scheduler::dispatch`] repeats until no device has a
//! free slot or no queued job is eligible for one: take the best job (policy
//! order) eligible for any device with a free slot, and start it. So a job never
//! waits while an eligible device has room, and when a device frees the best
//! eligible job takes it.
//!
//! **Instant balance.** The device for each dispatch is chosen at that moment
//! among the job's eligible devices with a free slot: fewest running jobs first,
//! then least accumulated busy time (evening out busy time), then lowest index.
//!
//! **Deadlines.** Before choosing, jobs past their drop instant are removed and
//! reported as [`Decision::Drop`]; they are never dispatched.
//!
//! **Fast lane** (`lanes`). Each device also has one fast slot, open while
//! its regular slots are all taken, at least one by a long job (estimated
//! cost above `fast`), and no fast job runs there ([`crate::fast_shape`]:
//! `width` slots, `beside=any` jobs of any length). When no regular slot can
//! take a job, the best short job (cost at most `fast`, aging order) eligible
//! for an open fast slot starts there, overlapping the long job; the device
//! is chosen among open fast slots by the rule above. Long jobs never take a
//! fast slot (rule: [`crate::policy`]). With a gate ([`crate::gate`]) a
//! short job takes a fast slot only where the gate admits it, oldest first;
//! [`Scheduler::next_wake`] says when a job held back is admitted.
//!
//! **Shares** (`fair`). [`Scheduler::complete`] charges the job's measured run
//! time (`now − started`) to its model's deficit counter; the policy reads the
//! counters at the next dispatch (rule: [`crate::policy`]).

use rustc_hash::FxHashMap;

use crate::queue::ReadyQueue;
use crate::{DeviceId, DeviceSet, Job, JobId, ModelId, Nanos, Policy, PolicyError};

/// A device as configured: how many jobs it runs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpec {
    pub capacity: u32,
}

impl Default for DeviceSpec {
    fn default() -> Self {
        Self { capacity: 1 }
    }
}

/// Why a job left the queue without running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Its hard deadline passed while it waited.
    DeadlineExpired,
    /// (`edf`) it could no longer finish by its deadline.
    DeadlineUnreachable,
}

/// One outcome of [`Scheduler::dispatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start `job` on `device` now.
    Run { job: Job, device: DeviceId },
    /// `job` will never run.
    Drop { job: Job, reason: DropReason },
}

/// What [`Scheduler::complete`] reports about a finished job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    pub device: DeviceId,
    pub started: Nanos,
    /// `now − started`: the time the job held its slot.
    pub held: Nanos,
}

#[derive(Debug, Clone)]
struct Device {
    slots: u32,
    /// Jobs running, fast slot included.
    running: u32,
    /// (`lanes`) long jobs running in regular slots.
    long: u32,
    /// (`lanes`) short jobs in fast slots.
    fast: u32,
    /// (`lanes` with a budget gate) the jobs in regular slots and their
    /// estimated ends (`started + cost`).
    ends: Vec<(JobId, Nanos)>,
    /// Time with at least one job running, up to `busy_since`.
    busy: Nanos,
    busy_since: Nanos,
}

#[derive(Debug, Clone, Copy)]
struct Running {
    /// A [`DeviceId`] (at most 64 devices), kept small with the lane and the
    /// model so an entry stays 16 bytes.
    device: u16,
    lane: Lane,
    model: ModelId,
    started: Nanos,
}

/// Which slot a running job holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// A regular slot, with a job that is short (or any job when there is no
    /// fast lane).
    Regular,
    /// (`lanes`) a regular slot, with a long job.
    RegularLong,
    /// (`lanes`) the fast slot.
    Fast,
}

/// The policy engine's state for one host. See the module docs for the rules.
#[derive(Debug)]
pub struct Scheduler {
    policy: Policy,
    devices: Vec<Device>,
    queue: ReadyQueue,
    running: FxHashMap<JobId, Running>,
    /// Devices with a free slot.
    free: DeviceSet,
    /// (fast-lane gate) when a short job held back at the last dispatch is
    /// admitted by time alone.
    wake: Option<Nanos>,
}

impl Scheduler {
    /// A scheduler over `devices` (ids `0..devices.len()`).
    pub fn new(policy: Policy, devices: &[DeviceSpec]) -> Result<Self, PolicyError> {
        if devices.is_empty() || devices.len() > DeviceSet::MAX_DEVICES {
            return Err(PolicyError::BadDeviceCount {
                count: devices.len(),
                max: DeviceSet::MAX_DEVICES,
            });
        }
        if let Some(device) = devices.iter().position(|d| d.capacity == 0) {
            return Err(PolicyError::BadCapacity { device });
        }
        let devices: Vec<Device> = devices
            .iter()
            .map(|d| Device {
                slots: policy.slots(d.capacity),
                running: 0,
                long: 0,
                fast: 0,
                ends: Vec::new(),
                busy: 0,
                busy_since: 0,
            })
            .collect();
        Ok(Self {
            policy,
            free: DeviceSet::all(devices.len()),
            devices,
            queue: ReadyQueue::new(policy),
            running: FxHashMap::default(),
            wake: None,
        })
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Number of devices.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// Every device.
    pub fn all_devices(&self) -> DeviceSet {
        DeviceSet::all(self.devices.len())
    }

    /// Jobs waiting for a device.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Jobs running on any device.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Jobs running on `device`.
    pub fn running_on(&self, device: DeviceId) -> u32 {
        self.devices[device].running
    }

    /// Devices with a free regular slot.
    pub fn free_devices(&self) -> DeviceSet {
        self.free
    }

    /// (`lanes`) devices with an open fast slot: regular slots all taken, at
    /// least one by a long job (any job with `beside=any`), fewer fast jobs
    /// running than the lane's width (1 by default). Empty under other
    /// policies.
    pub fn fast_open(&self) -> DeviceSet {
        if self.policy.fast_lane().is_none() {
            return DeviceSet::default();
        }
        let shape = self.policy.fast_shape();
        self.devices
            .iter()
            .enumerate()
            .filter(|(i, d)| !self.free.contains(*i) && shape.open(d.long, d.fast))
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether a dispatch now could start a job somewhere: a free regular
    /// slot or an open fast slot.
    pub fn has_room(&self) -> bool {
        !self.free.is_empty() || !self.fast_open().is_empty()
    }

    /// (fast-lane gate) the instant at which a short job that the gate held
    /// back at the last [`Scheduler::dispatch`] is admitted with no other
    /// event in between: call `dispatch` then. `None` when none was held back
    /// or no fast slot is open any more (then only an event can change that).
    pub fn next_wake(&self) -> Option<Nanos> {
        self.wake.filter(|_| !self.fast_open().is_empty())
    }

    /// (`lanes`) whether a short job holds one of `device`'s fast slots.
    pub fn fast_running(&self, device: DeviceId) -> bool {
        self.devices[device].fast > 0
    }

    /// Time `device` has had at least one job running, as of `now`.
    pub fn busy_time(&self, device: DeviceId, now: Nanos) -> Nanos {
        let d = &self.devices[device];
        d.busy
            + if d.running > 0 {
                now.saturating_sub(d.busy_since)
            } else {
                0
            }
    }

    /// (`fair`) device time `model` is owed (> 0) or has taken beyond its
    /// share (< 0), in ns; `None` under other policies.
    pub fn deficit(&self, model: ModelId) -> Option<i64> {
        self.queue.deficit(model)
    }

    /// Queues a job. Its eligible set is narrowed to existing devices; a job
    /// left with none, or whose id is queued or running, is refused.
    pub fn submit(&mut self, mut job: Job) -> Result<(), PolicyError> {
        job.devices = job.devices.intersect(self.all_devices());
        if job.devices.is_empty() {
            return Err(PolicyError::NoEligibleDevice {
                job: job.id,
                devices: self.devices.len(),
            });
        }
        if self.queue.contains(job.id) || self.running.contains_key(&job.id) {
            return Err(PolicyError::DuplicateJob { job: job.id });
        }
        self.queue.push(job);
        Ok(())
    }

    /// Removes a queued job; `None` if it is not queued (running jobs finish).
    pub fn cancel(&mut self, id: JobId) -> Option<Job> {
        self.queue.cancel(id)
    }

    /// Every decision that can be taken at `now`, appended to `out`: drops of
    /// jobs past their deadline, then starts until no eligible device has room.
    pub fn dispatch(&mut self, now: Nanos, out: &mut Vec<Decision>) {
        let reason = match self.policy {
            Policy::Edf => DropReason::DeadlineUnreachable,
            _ => DropReason::DeadlineExpired,
        };
        while let Some(job) = self.queue.pop_expired(now) {
            out.push(Decision::Drop { job, reason });
        }
        self.queue.settle();
        self.wake = None;
        let gate = self.policy.fast_gate();
        while self.queue.len() > 0 {
            if !self.free.is_empty() {
                if let Some(candidate) = self.queue.best(self.free, now) {
                    let device = self.pick_device(candidate.devices.intersect(self.free), now);
                    let job = self.queue.start(candidate.slot);
                    self.start(&job, device, Lane::Regular, now);
                    out.push(Decision::Run { job, device });
                    continue;
                }
            }
            // No regular slot can take a job: the fast lane, if any.
            let open = self.fast_open();
            if open.is_empty() {
                break;
            }
            let gate = gate.at(now, self.queue.oldest_long());
            let devices = &self.devices;
            let admit = |arrival: Nanos, reachable: DeviceSet| -> Result<DeviceSet, Nanos> {
                if gate.is_open() {
                    return Ok(reachable);
                }
                let end = |d: DeviceId| devices[d].ends.iter().map(|e| e.1).min().unwrap_or(now);
                let admitted: DeviceSet = reachable
                    .iter()
                    .filter(|&d| gate.admits(arrival, now, end(d)))
                    .collect();
                if admitted.is_empty() {
                    let at = reachable
                        .iter()
                        .map(|d| gate.admitted_at(arrival, now, end(d)));
                    return Err(at.min().unwrap_or(Nanos::MAX));
                }
                Ok(admitted)
            };
            let (candidate, held) = self.queue.best_short(open, admit);
            if let Some(at) = held {
                self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
            }
            let Some(candidate) = candidate else {
                break;
            };
            let device = self.pick_device(candidate.devices.intersect(open), now);
            let job = self.queue.start(candidate.slot);
            self.start(&job, device, Lane::Fast, now);
            out.push(Decision::Run { job, device });
        }
    }

    /// The dispatch rule's device choice among `choices` (non-empty).
    fn pick_device(&self, choices: DeviceSet, now: Nanos) -> DeviceId {
        choices
            .iter()
            .min_by_key(|&d| (self.devices[d].running, self.busy_time(d, now), d))
            .expect("pick_device: at least one free eligible device")
    }

    fn start(&mut self, job: &Job, device: DeviceId, lane: Lane, now: Nanos) {
        let lane = match (lane, self.policy.fast_lane()) {
            (Lane::Regular, Some(fast)) if job.cost > fast => Lane::RegularLong,
            (lane, _) => lane,
        };
        let d = &mut self.devices[device];
        if d.running == 0 {
            d.busy_since = now;
        }
        d.running += 1;
        match lane {
            Lane::Fast => d.fast += 1,
            Lane::RegularLong => d.long += 1,
            Lane::Regular => {}
        }
        if lane != Lane::Fast && !self.policy.fast_gate().is_open() {
            d.ends.push((job.id, now.saturating_add(job.cost)));
        }
        if d.running - d.fast >= d.slots {
            self.free.0 &= !(1u64 << device);
        }
        self.running.insert(
            job.id,
            Running {
                device: device as u16,
                lane,
                model: job.model,
                started: now,
            },
        );
    }

    /// Marks a running job finished at `now`, freeing its slot. Call
    /// [`Scheduler::dispatch`] afterwards to hand the slot on.
    pub fn complete(&mut self, id: JobId, now: Nanos) -> Result<Completed, PolicyError> {
        let r = self
            .running
            .remove(&id)
            .ok_or(PolicyError::NotRunning { job: id })?;
        let d = &mut self.devices[r.device as usize];
        d.running -= 1;
        match r.lane {
            Lane::Fast => d.fast -= 1,
            Lane::RegularLong => d.long -= 1,
            Lane::Regular => {}
        }
        if d.running == 0 {
            d.busy += now.saturating_sub(d.busy_since);
        }
        d.ends.retain(|e| e.0 != id);
        if r.lane != Lane::Fast {
            self.free.0 |= 1u64 << r.device;
        }
        self.queue.finished(r.model, now.saturating_sub(r.started));
        Ok(Completed {
            device: r.device as DeviceId,
            started: r.started,
            held: now.saturating_sub(r.started),
        })
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "test_clock.rs"]
mod test_clock;

#[cfg(test)]
#[path = "fair_tests.rs"]
mod fair_tests;

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod lanes_tests;

#[cfg(test)]
#[path = "starve_tests.rs"]
mod starve_tests;
