//! One model's queue: admission bound, readiness and late batch formation.
//!
//! The rules (design.md §3):
//!
//! - **Bound.** At most `max_enqueued_batches × max(1, max_batch_size)` rows
//!   are held at once (admitted and still in pre-processing, or queued); past
//!   it admission refuses with 429. One request larger than the bound (a full
//!   client-side batch) is admitted when nothing else is held, so an idle model
//!   never refuses it as "queue full".
//! - **Readiness.** The model is *ready* when its queue holds
//!   `max_batch_size` rows, or its oldest request has waited
//!   `batch_timeout`, or that timeout is 0 (eager: an idle device takes
//!   whatever is queued, so a lone request pays no batching delay and batches
//!   grow by themselves while devices are busy).
//! - **Late formation.** A batch is cut only when a device has been granted
//!   ([`ModelQueue::take`]): requests whose deadline has passed are removed
//!   first (they never reach a device), then whole requests are taken in
//!   arrival order while the rows fit `max_batch_size`. A request is never
//!   split; one larger than `max_batch_size` runs alone. With batching off
//!   (`max_batch_size` 0) every request is a batch of its own.

use std::collections::VecDeque;

use lanes_policy::Nanos;

/// TF-Serving's batching knobs, as the server and the simulator use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// Rows per batch at most; 0 turns batching off.
    pub max_batch_size: u32,
    /// How long a partial batch may wait for company while a device is free.
    pub batch_timeout: Nanos,
    /// Batches of this model in flight at once (per device under `independent`).
    pub num_batch_threads: u32,
    /// The queue bound, in batches.
    pub max_enqueued_batches: u32,
}

impl Default for Batching {
    fn default() -> Self {
        Self {
            max_batch_size: 0,
            batch_timeout: 0,
            num_batch_threads: 1,
            max_enqueued_batches: 64,
        }
    }
}

impl Batching {
    /// The admission bound in rows.
    pub fn queue_rows(&self) -> u64 {
        u64::from(self.max_enqueued_batches) * u64::from(self.max_batch_size.max(1))
    }
}

/// A request's identity, chosen by the driver (unique among live requests).
pub type RequestId = u64;

/// One request as the queue holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    pub id: RequestId,
    /// Rows (the leading batch dimension), at least 1.
    pub rows: u32,
    /// When it arrived at the server (for messages and measured waits).
    pub arrival: Nanos,
    /// When it entered the queue (readiness timeout and job arrival).
    pub enqueued: Nanos,
    /// Hard deadline: past it the request is failed, never run.
    pub deadline: Option<Nanos>,
    /// Soft target (`sjf`'s slack rule); the deadline when none is given.
    pub target: Option<Nanos>,
}

impl Queued {
    fn expired(&self, now: Nanos) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// A run ending at `end` would end past its deadline (`edf`'s
    /// unreachable rule and the `finish` deadline rule).
    pub fn misses(&self, end: Nanos) -> bool {
        self.deadline.is_some_and(|d| end > d)
    }
}

/// One model's queue; see the module docs for the rules.
#[derive(Debug)]
pub struct ModelQueue {
    pub batching: Batching,
    items: VecDeque<Queued>,
    rows: u64,
    reserved: u64,
    /// No queued deadline is earlier than this (a lower bound; exact after a scan).
    next_deadline: Nanos,
}

impl ModelQueue {
    pub fn new(batching: Batching) -> Self {
        Self {
            batching,
            items: VecDeque::new(),
            rows: 0,
            reserved: 0,
            next_deadline: Nanos::MAX,
        }
    }

    /// Rows queued now.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Requests queued now.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The oldest queued request.
    pub fn front(&self) -> Option<&Queued> {
        self.items.front()
    }

    /// Rows admitted and not yet queued or released.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Reserves room for `rows`; `false` when the bound refuses it.
    pub fn admit(&mut self, rows: u32) -> bool {
        let held = self.rows + self.reserved;
        if held > 0 && held + u64::from(rows) > self.batching.queue_rows() {
            return false;
        }
        self.reserved += u64::from(rows);
        true
    }

    /// Gives back a reservation (the request failed before it was queued).
    pub fn release(&mut self, rows: u32) {
        self.reserved = self.reserved.saturating_sub(u64::from(rows));
    }

    /// Queues an admitted request: its reservation becomes queued rows.
    pub fn push(&mut self, q: Queued) {
        self.reserved = self.reserved.saturating_sub(u64::from(q.rows));
        self.rows += u64::from(q.rows);
        if let Some(d) = q.deadline {
            self.next_deadline = self.next_deadline.min(d);
        }
        self.items.push_back(q);
    }

    /// Takes a queued request out (withdrawn); `None` if it is not queued.
    pub fn remove(&mut self, id: RequestId) -> Option<Queued> {
        let i = self.items.iter().position(|q| q.id == id)?;
        let q = self.items.remove(i)?;
        self.rows -= u64::from(q.rows);
        Some(q)
    }

    /// The instant the model is (or will be) ready; `None` when empty.
    pub fn ready_at(&self, now: Nanos) -> Option<Nanos> {
        let first = self.items.front()?;
        let b = &self.batching;
        if b.batch_timeout == 0 || b.max_batch_size == 0 || self.rows >= u64::from(b.max_batch_size)
        {
            return Some(now);
        }
        Some(now.max(first.enqueued.saturating_add(b.batch_timeout)))
    }

    /// Rows the next batch would take if cut now (for its cost estimate).
    pub fn next_batch_rows(&self) -> u32 {
        let cap = self.batching.max_batch_size;
        let mut total = 0u32;
        for q in &self.items {
            if cap == 0 {
                return q.rows;
            }
            if total > 0 && total + q.rows > cap {
                break;
            }
            total += q.rows;
            if total >= cap {
                break;
            }
        }
        total
    }

    /// Earliest hard deadline among queued requests.
    pub fn earliest_deadline(&self) -> Option<Nanos> {
        self.items.iter().filter_map(|q| q.deadline).min()
    }

    /// Moves every queued request whose deadline has passed into `expired`.
    /// Cheap when none can have: it scans only once `now` reaches the
    /// earliest deadline it has seen.
    pub fn expire(&mut self, now: Nanos, expired: &mut Vec<Queued>) {
        if now < self.next_deadline {
            return;
        }
        let before = expired.len();
        self.items.retain(|q| {
            let gone = q.expired(now);
            if gone {
                expired.push(*q);
            }
            !gone
        });
        for q in &expired[before..] {
            self.rows -= u64::from(q.rows);
        }
        self.next_deadline = self.earliest_deadline().unwrap_or(Nanos::MAX);
    }

    /// When [`ModelQueue::expire`] has work next (`Nanos::MAX`: never).
    pub fn next_expiry(&self) -> Nanos {
        self.next_deadline
    }

    /// Cuts a batch now into `batch`; expired requests go to `expired`. Both
    /// leave the queue. Returns the batch's rows.
    pub fn take(&mut self, now: Nanos, batch: &mut Vec<Queued>, expired: &mut Vec<Queued>) -> u32 {
        self.expire(now, expired);
        let cap = self.batching.max_batch_size;
        let mut total = 0u32;
        while let Some(&q) = self.items.front() {
            if !batch.is_empty() && (cap == 0 || total + q.rows > cap) {
                break;
            }
            self.items.pop_front();
            self.rows -= u64::from(q.rows);
            batch.push(q);
            total += q.rows;
            if cap == 0 || total >= cap {
                break;
            }
        }
        total
    }

    /// Moves the requests that cannot meet their deadline even if started
    /// now into `gone` (see [`ModelQueue::drop_unreachable`]); when none is
    /// found, the one with the earliest deadline, so that a caller told the
    /// work is unreachable always makes progress.
    pub fn drop_late(&mut self, now: Nanos, cost: Nanos, gone: &mut Vec<Queued>) {
        let before = gone.len();
        self.drop_unreachable(now, cost, gone);
        if gone.len() == before {
            if let Some(d) = self.earliest_deadline() {
                self.drop_unreachable(d, 1, gone);
            }
        }
    }

    /// (`edf`) moves the requests that cannot meet their deadline even if
    /// started now, with a run of `cost`, into `gone`.
    pub fn drop_unreachable(&mut self, now: Nanos, cost: Nanos, gone: &mut Vec<Queued>) {
        let before = gone.len();
        self.items.retain(|q| {
            let late = q.misses(now + cost);
            if late {
                gone.push(*q);
            }
            !late
        });
        for q in &gone[before..] {
            self.rows -= u64::from(q.rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: u64, rows: u32, at: Nanos, deadline: Option<Nanos>) -> Queued {
        Queued {
            id,
            rows,
            arrival: at,
            enqueued: at,
            deadline,
            target: deadline,
        }
    }

    fn batching(max: u32, timeout: Nanos) -> Batching {
        Batching {
            max_batch_size: max,
            batch_timeout: timeout,
            num_batch_threads: 1,
            max_enqueued_batches: 2,
        }
    }

    #[test]
    fn admission_bound_table() {
        // (max_batch_size, rows already queued, request rows, admitted)
        let cases = [
            (4, 0, 3, true),
            (4, 6, 2, true),  // exactly the bound of 8
            (4, 6, 3, false), // one past it
            (4, 0, 20, true), // a full client batch on an idle model
            (4, 1, 20, false),
            (0, 1, 1, true), // batching off: bound = max_enqueued_batches rows
            (0, 2, 1, false),
        ];
        for (max, held, rows, ok) in cases {
            let mut m = ModelQueue::new(batching(max, 0));
            if held > 0 {
                assert!(m.admit(held));
                m.push(q(1, held, 0, None));
            }
            assert_eq!(m.admit(rows), ok, "max {max} held {held} rows {rows}");
        }
    }

    #[test]
    fn readiness_table() {
        // (max, timeout, rows queued at t=0, now, ready_at)
        let cases: [(u32, Nanos, u64, Nanos, Option<Nanos>); 6] = [
            (8, 0, 1, 5, Some(5)),       // eager
            (8, 100, 1, 5, Some(100)),   // waits for company
            (8, 100, 1, 150, Some(150)), // timeout passed
            (8, 100, 8, 5, Some(5)),     // full
            (0, 100, 1, 5, Some(5)),     // batching off
            (8, 100, 0, 5, None),        // empty
        ];
        for (max, timeout, rows, now, want) in cases {
            let mut m = ModelQueue::new(batching(max, timeout));
            for i in 0..rows {
                m.push(q(i, 1, 0, None));
            }
            assert_eq!(
                m.ready_at(now),
                want,
                "max {max} timeout {timeout} rows {rows}"
            );
        }
    }

    #[test]
    fn take_cuts_whole_requests_and_drops_expired_first() {
        // (max, requests as (rows, deadline), now, batch ids, expired ids)
        type Case = (u32, Vec<(u32, Option<Nanos>)>, Nanos, Vec<u64>, Vec<u64>);
        let cases: Vec<Case> = vec![
            (
                4,
                vec![(1, None), (2, None), (2, None)],
                10,
                vec![0, 1],
                vec![],
            ),
            (
                4,
                vec![(1, Some(5)), (2, None), (2, None)],
                10,
                vec![1, 2],
                vec![0],
            ),
            (4, vec![(9, None), (1, None)], 10, vec![0], vec![]), // big runs alone
            (0, vec![(3, None), (1, None)], 10, vec![0], vec![]), // batching off
            (4, vec![(1, Some(10))], 10, vec![], vec![0]),        // deadline == now
        ];
        for (max, reqs, now, want_batch, want_expired) in cases {
            let mut m = ModelQueue::new(batching(max, 0));
            for (i, (rows, d)) in reqs.iter().enumerate() {
                m.push(q(i as u64, *rows, 0, *d));
            }
            let rows_before = m.rows();
            let (mut b, mut e) = (Vec::new(), Vec::new());
            let total = m.take(now, &mut b, &mut e);
            let ids = |v: &[Queued]| v.iter().map(|q| q.id).collect::<Vec<_>>();
            assert_eq!(ids(&b), want_batch);
            assert_eq!(ids(&e), want_expired);
            assert_eq!(total, b.iter().map(|q| q.rows).sum::<u32>());
            let gone: u64 = b.iter().chain(&e).map(|q| u64::from(q.rows)).sum();
            assert_eq!(m.rows(), rows_before - gone);
        }
    }

    #[test]
    fn next_batch_rows_matches_take() {
        for max in [0, 1, 3, 4, 16] {
            let mut m = ModelQueue::new(batching(max, 0));
            for (i, rows) in [2, 1, 3, 1, 1].into_iter().enumerate() {
                m.push(q(i as u64, rows, 0, None));
            }
            let predicted = m.next_batch_rows();
            let (mut b, mut e) = (Vec::new(), Vec::new());
            assert_eq!(m.take(0, &mut b, &mut e), predicted, "max {max}");
        }
    }

    #[test]
    fn expire_scans_only_past_the_earliest_deadline() {
        let mut m = ModelQueue::new(batching(8, 0));
        m.push(q(0, 1, 0, Some(50)));
        m.push(q(1, 1, 0, Some(20)));
        m.push(q(2, 1, 0, None));
        assert_eq!(m.next_expiry(), 20);
        let mut e = Vec::new();
        m.expire(19, &mut e);
        assert!(e.is_empty());
        m.expire(20, &mut e);
        assert_eq!(e.iter().map(|q| q.id).collect::<Vec<_>>(), [1]);
        assert_eq!(m.next_expiry(), 50);
        assert_eq!(m.rows(), 2);
    }

    #[test]
    fn unreachable_requests_leave_under_edf() {
        let mut m = ModelQueue::new(batching(8, 0));
        m.push(q(0, 1, 0, Some(100)));
        m.push(q(1, 1, 0, Some(300)));
        let mut gone = Vec::new();
        m.drop_unreachable(50, 100, &mut gone);
        assert_eq!(gone.iter().map(|q| q.id).collect::<Vec<_>>(), [0]);
        assert_eq!(m.len(), 1);
    }
}
