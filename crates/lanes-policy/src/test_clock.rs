//! The event clock shared by the policy tests' small simulators: the next
//! instant is the earlier of the next job end and the next arrival, and at
//! that instant every job ending then completes first.

use crate::{JobId, Nanos, Scheduler};

/// Jobs running, as (end, id), in no particular order.
pub(crate) type Running = Vec<(Nanos, JobId)>;

/// Advances to the next instant — the earliest of the running jobs' ends and
/// `next_arrival` — and completes the jobs ending then (each also handed to
/// `ended`). `None` when nothing runs and nothing arrives.
pub(crate) fn advance(
    s: &mut Scheduler,
    running: &mut Running,
    next_arrival: Option<Nanos>,
    mut ended: impl FnMut(JobId),
) -> Option<Nanos> {
    let next_end = running.iter().map(|r| r.0).min();
    let now = match (next_end, next_arrival) {
        (None, None) => return None,
        (Some(e), Some(a)) => e.min(a),
        (e, a) => e.or(a)?,
    };
    running.retain(|&(end, id)| {
        if end == now {
            s.complete(id, now).expect("a running job completes");
            ended(id);
        }
        end != now
    });
    Some(now)
}
