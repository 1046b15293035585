//! The engine's one error type. Every variant has a stable machine-readable
//! [`PolicyError::code`]; bindings map codes, never message text.

use thiserror::Error;

/// Everything the policy engine can refuse.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PolicyError {
    /// A policy name that is not one of the known ones.
    #[error("unknown policy '{name}': allowed are {allowed}")]
    UnknownPolicy { name: String, allowed: &'static str },
    /// A known policy with an argument that is malformed or out of range.
    #[error("policy '{policy}': {key} = '{value}': {allowed}")]
    BadPolicyArgument {
        policy: String,
        key: String,
        value: String,
        allowed: String,
    },
    /// A scheduler needs between 1 and 64 devices.
    #[error("devices: {count}: must be between 1 and {max}")]
    BadDeviceCount { count: usize, max: usize },
    /// A device capacity of zero could never run anything.
    #[error("device {device}: capacity = 0: must be at least 1")]
    BadCapacity { device: usize },
    /// A job whose eligible set names no existing device.
    #[error("job {job}: no eligible device among the scheduler's {devices}")]
    NoEligibleDevice { job: u64, devices: usize },
    /// A job id submitted while a job with the same id is queued or running.
    #[error("job {job}: id already queued or running")]
    DuplicateJob { job: u64 },
    /// A completion for a job that is not running.
    #[error("job {job}: not running")]
    NotRunning { job: u64 },
}

impl PolicyError {
    /// The stable code of this error, e.g. `"unknown_policy"`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownPolicy { .. } => "unknown_policy",
            Self::BadPolicyArgument { .. } => "bad_policy_argument",
            Self::BadDeviceCount { .. } => "bad_device_count",
            Self::BadCapacity { .. } => "bad_capacity",
            Self::NoEligibleDevice { .. } => "no_eligible_device",
            Self::DuplicateJob { .. } => "duplicate_job",
            Self::NotRunning { .. } => "not_running",
        }
    }
}
