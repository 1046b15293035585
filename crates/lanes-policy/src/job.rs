//! Jobs and the sets of devices they may run on.

use crate::Nanos;

/// A caller-chosen job identifier, unique among queued and running jobs.
pub type JobId = u64;
/// A model (job class); the caller maps names to ids.
pub type ModelId = u32;
/// A device index, `0..devices`.
pub type DeviceId = usize;

/// A set of devices as a bit mask (at most 64 devices per scheduler).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DeviceSet(pub u64);

impl DeviceSet {
    /// The largest number of devices a set can name.
    pub const MAX_DEVICES: usize = 64;

    /// Every device `0..n`.
    pub fn all(n: usize) -> Self {
        if n >= Self::MAX_DEVICES {
            Self(u64::MAX)
        } else {
            Self((1u64 << n) - 1)
        }
    }

    /// Exactly one device.
    pub fn only(device: DeviceId) -> Self {
        Self(1u64 << device)
    }

    /// Whether `device` is in the set.
    pub fn contains(self, device: DeviceId) -> bool {
        device < Self::MAX_DEVICES && self.0 & (1u64 << device) != 0
    }

    /// The devices in both sets.
    pub fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The devices in the set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = DeviceId> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let d = bits.trailing_zeros() as DeviceId;
            bits &= bits - 1;
            Some(d)
        })
    }
}

impl FromIterator<DeviceId> for DeviceSet {
    fn from_iter<I: IntoIterator<Item = DeviceId>>(iter: I) -> Self {
        Self(iter.into_iter().fold(0, |acc, d| acc | (1u64 << d)))
    }
}

/// One batch of one model, waiting for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// Unique among queued and running jobs.
    pub id: JobId,
    /// The model (class) the batch belongs to.
    pub model: ModelId,
    /// Items in the batch.
    pub batch: u32,
    /// Estimated run time on a device, alone.
    pub cost: Nanos,
    /// When the job became ready.
    pub arrival: Nanos,
    /// Hard deadline: the job is dropped, never dispatched, once it has passed
    /// (`edf`: once the job can no longer finish by it).
    pub deadline: Option<Nanos>,
    /// Soft target completion time (the SLO): used by slack-aware ordering,
    /// never a reason to drop.
    pub target: Option<Nanos>,
    /// Devices the job may run on.
    pub devices: DeviceSet,
}

impl Job {
    /// A job with no deadline or target, eligible everywhere in `devices`.
    pub fn new(id: JobId, model: ModelId, cost: Nanos, arrival: Nanos, devices: DeviceSet) -> Self {
        Self {
            id,
            model,
            batch: 1,
            cost,
            arrival,
            deadline: None,
            target: None,
            devices,
        }
    }

    /// The same job with a hard deadline.
    pub fn with_deadline(mut self, deadline: Nanos) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same job with a soft target completion time.
    pub fn with_target(mut self, target: Nanos) -> Self {
        self.target = Some(target);
        self
    }

    /// The same job with a batch size.
    pub fn with_batch(mut self, batch: u32) -> Self {
        self.batch = batch;
        self
    }
}
