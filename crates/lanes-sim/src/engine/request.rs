//! A request's lifecycle: arrival, the client's connection, waits, drop or
//! completion.
//!
//! Each service has its own arrival process and random stream, seeded by
//! (seed, service) so that a seed's arrivals and costs do not depend on the
//! mode. An arriving request samples its pre, GPU and post costs at once
//! (GPU at least 1 ns) and takes a free slot of the request table; it is
//! measured if it is not among the first [`super::WARMUP_FRACTION`] of all
//! arrivals. Its queueing time is the sum of its waits for GPU access. It
//! ends completed (latency = end − arrival, against its own cost pre + GPU +
//! post and its service's SLO) or dropped (past its deadline, counting as
//! an SLO miss); either way its slot is freed.
//!
//! **The client's connections** (`client_connections`, the rule of
//! `lanes bench`'s open-loop pacer, crates/lanes-load/src/pacer.rs): a
//! service's load generator has that many connections, one request in
//! flight on each. A request that arrives while all of them are in the
//! server waits at the client, first come first served; when one of the
//! service's requests ends (completed or dropped), the connection it held
//! takes the longest-waiting one (an event at that instant). The server
//! sees a request from when it was *sent*: its serving-state arrival, its
//! deadline and its SLO target count from then, as `lanes serve`'s do from
//! when the request reached it; its latency still counts from its arrival
//! (the schedule's time), as the lab measures it. Without the key a request
//! is sent as it arrives, and nothing else changes.

use std::collections::VecDeque;

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

use super::event::Ev;
use super::Sim;
use crate::config::{Mode, Scenario};
use crate::workload::{ArrivalGen, CostSampler};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Pre,
    Post,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Req {
    pub(super) service: u8,
    pub(super) gpu: u16,
    pub(super) phase: Phase,
    pub(super) measured: bool,
    pub(super) arrival: u64,
    /// When it reached the server: its arrival, or later when it waited
    /// at the client for a connection.
    pub(super) sent: u64,
    pub(super) pre: u64,
    pub(super) work: u64,
    pub(super) post: u64,
    /// Start of the current wait for GPU access, and the total so far.
    pub(super) waiting_since: u64,
    queued: u64,
    pub(super) gpu_start: u64,
}

/// A service at run time: its arrivals, its random stream and costs, its
/// SLO and deadline (ns).
#[derive(Debug)]
pub(super) struct ServiceRt {
    arrivals: ArrivalGen,
    rng: Pcg64Mcg,
    pre: CostSampler,
    gpu: CostSampler,
    post: CostSampler,
    last: u64,
    pub(super) slo: u64,
    pub(super) deadline: Option<u64>,
    /// The client's connections (`None`: no limit), how many of them hold
    /// a request in the server, and the requests waiting for one.
    connections: Option<u32>,
    in_server: u32,
    at_client: VecDeque<u32>,
}

/// The services of `sc` at `load` (shared by share) with `seed`'s streams.
pub(super) fn services(sc: &Scenario, load: f64, seed: u64) -> Vec<ServiceRt> {
    let rate = sc.rate_for_load(load);
    let share_sum: f64 = sc.services.iter().map(|s| s.share).sum();
    sc.services
        .iter()
        .enumerate()
        .map(|(i, s)| ServiceRt {
            arrivals: ArrivalGen::new(&s.arrival, rate * s.share / share_sum),
            // One stream per (seed, service): arrivals and costs do not
            // depend on the mode.
            rng: Pcg64Mcg::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64 + 1)),
            pre: CostSampler::new(&s.pre),
            gpu: CostSampler::new(&s.gpu),
            post: CostSampler::new(&s.post),
            last: 0,
            slo: (s.slo_ms.unwrap_or(sc.slo_ms) * 1e6) as u64,
            deadline: s.deadline_ms.map(|d| (d * 1e6) as u64),
            connections: s.client_connections,
            in_server: 0,
            at_client: VecDeque::new(),
        })
        .collect()
}

impl Sim<'_> {
    #[inline]
    pub(super) fn schedule_arrival(&mut self, service: usize) {
        let s = &mut self.services[service];
        let t = s.arrivals.next(s.last, &mut s.rng);
        s.last = t;
        self.at(t, Ev::Arrival(service as u8));
    }

    #[inline]
    pub(super) fn on_arrival(&mut self, service: usize) {
        if self.generated == self.total {
            return;
        }
        let index = self.generated;
        self.generated += 1;
        if index == self.warmup {
            self.open_window();
        }
        if index >= self.warmup {
            self.last_arrival = self.now;
        }
        let s = &mut self.services[service];
        let req = Req {
            service: service as u8,
            gpu: 0,
            phase: Phase::Pre,
            measured: index >= self.warmup,
            arrival: self.now,
            sent: self.now,
            pre: s.pre.sample(&mut s.rng),
            work: s.gpu.sample(&mut s.rng).max(1),
            post: s.post.sample(&mut s.rng),
            waiting_since: self.now,
            queued: 0,
            gpu_start: 0,
        };
        let r = match self.free.pop() {
            Some(r) => {
                self.reqs[r as usize] = req;
                r
            }
            None => {
                self.reqs.push(req);
                (self.reqs.len() - 1) as u32
            }
        };
        self.schedule_arrival(service);
        let s = &mut self.services[service];
        match s.connections {
            None => self.send(r),
            Some(c) if s.in_server >= c => s.at_client.push_back(r),
            Some(_) => {
                s.in_server += 1;
                self.send(r);
            }
        }
    }

    /// Request `r` reaches the server, on a connection already counted as
    /// holding it.
    pub(super) fn send(&mut self, r: u32) {
        let q = &mut self.reqs[r as usize];
        q.sent = self.now;
        q.waiting_since = self.now;
        let service = q.service as usize;
        match self.mode {
            Mode::Engine(_) | Mode::Independent => self.begin_cpu(r, Phase::Pre),
            Mode::Semaphore => self.bind_worker(r, service),
        }
    }

    /// Request `r` has left the server (completed or dropped): its slot is
    /// freed, and with `client_connections` its connection takes the
    /// request that has waited longest at the client, sent by an event now.
    pub(super) fn leave(&mut self, r: u32) {
        self.free.push(r);
        let s = &mut self.services[self.reqs[r as usize].service as usize];
        if s.connections.is_none() {
            return;
        }
        match s.at_client.pop_front() {
            Some(next) => self.at(self.now, Ev::Send(next)),
            None => s.in_server -= 1,
        }
    }

    pub(super) fn end_wait(&mut self, r: u32) {
        let q = &mut self.reqs[r as usize];
        q.queued += self.now - q.waiting_since;
        q.waiting_since = self.now;
    }

    pub(super) fn expired(&self, r: u32) -> bool {
        let q = &self.reqs[r as usize];
        self.services[q.service as usize]
            .deadline
            .is_some_and(|d| self.now > q.sent + d)
    }

    /// Request `r`'s post is done: it is recorded and its slot freed.
    pub(super) fn finish(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        if q.measured {
            let s = &self.services[q.service as usize];
            let client = self
                .client
                .as_ref()
                .map_or(0, |c| c.sample(&mut self.client_rng));
            let latency = self.now - q.arrival + client;
            let own = q.pre + q.work + q.post;
            self.per_service[q.service as usize].complete(latency, own, s.slo);
            self.gpu_time.queue += q.queued;
            self.last_done = self.now;
        }
        match self.mode {
            Mode::Engine(_) | Mode::Independent => {}
            Mode::Semaphore => self.release_worker(&q),
        }
        self.leave(r);
    }

    pub(super) fn record_drop(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        if q.measured {
            self.per_service[q.service as usize].drop_one();
            self.last_done = self.last_done.max(self.now);
        }
    }
}
