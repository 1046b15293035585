//! The `semaphore` mode: the field's per-GPU limit, one request at a time.
//!
//! **Rule.** An arriving request is bound round-robin to a GPU (per
//! service), then waits (FCFS) for one of the service's `workers_per_gpu`
//! workers on that GPU and (FCFS) for one of the GPU's `host.semaphore`
//! permits; it holds both from before its pre until after its post. Its GPU
//! phase is a job of its own, overlapping whatever else runs on the GPU. A
//! request past its deadline when a worker takes it is dropped and the
//! worker takes the next.

use std::collections::VecDeque;

use super::event::Ev;
use super::request::{Phase, Req};
use super::Sim;
use crate::config::{Mode, Scenario};

/// Worker pools and semaphores of the `semaphore` mode, indexed
/// `service * gpus + gpu` (workers) and `gpu` (semaphores).
#[derive(Debug)]
pub(super) struct Pools {
    idle_workers: Vec<u32>,
    worker_queue: Vec<VecDeque<u32>>,
    permits: Vec<u32>,
    permit_queue: Vec<VecDeque<u32>>,
    next_gpu: Vec<usize>,
}

impl Pools {
    /// Every worker idle, every permit free, each service's next GPU the first.
    pub(super) fn new(sc: &Scenario) -> Self {
        let g = sc.host.gpus;
        let n = sc.services.len();
        Self {
            idle_workers: sc
                .services
                .iter()
                .flat_map(|s| vec![s.workers_per_gpu; g])
                .collect(),
            worker_queue: vec![VecDeque::new(); n * g],
            permits: vec![sc.host.semaphore; g],
            permit_queue: vec![VecDeque::new(); g],
            next_gpu: vec![0; n],
        }
    }
}

impl Sim<'_> {
    /// The arrived request `r` of `service` is bound to the service's next
    /// GPU and waits for a worker there.
    pub(super) fn bind_worker(&mut self, r: u32, service: usize) {
        let g = self.pools.next_gpu[service];
        self.pools.next_gpu[service] = (g + 1) % self.gpus.len();
        self.reqs[r as usize].gpu = g as u16;
        let pool = service * self.gpus.len() + g;
        if self.pools.idle_workers[pool] > 0 {
            self.pools.idle_workers[pool] -= 1;
            if !self.worker_takes(r) {
                self.pools.idle_workers[pool] += 1;
            }
        } else {
            self.pools.worker_queue[pool].push_back(r);
        }
    }

    /// A worker (already counted busy) takes `r`; `false` if `r` had expired
    /// and was dropped instead, leaving the worker free.
    fn worker_takes(&mut self, r: u32) -> bool {
        self.end_wait(r);
        if self.expired(r) {
            self.record_drop(r);
            self.leave(r);
            return false;
        }
        if self.mode == Mode::Semaphore {
            let g = self.reqs[r as usize].gpu as usize;
            if self.pools.permits[g] == 0 {
                self.pools.permit_queue[g].push_back(r);
                return true;
            }
            self.pools.permits[g] -= 1;
        }
        self.begin_cpu(r, Phase::Pre);
        true
    }

    /// A worker of `pool` is free: it takes the next live request, or idles.
    fn worker_released(&mut self, pool: usize) {
        while let Some(next) = self.pools.worker_queue[pool].pop_front() {
            if self.worker_takes(next) {
                return;
            }
        }
        self.pools.idle_workers[pool] += 1;
    }

    /// The finished request `q` gives back its permit (to the next waiting
    /// request, which begins its pre) and its worker.
    pub(super) fn release_worker(&mut self, q: &Req) {
        let pool = q.service as usize * self.gpus.len() + q.gpu as usize;
        let g = q.gpu as usize;
        match self.pools.permit_queue[g].pop_front() {
            Some(next) => {
                self.end_wait(next);
                self.begin_cpu(next, Phase::Pre);
            }
            None => self.pools.permits[g] += 1,
        }
        self.worker_released(pool);
    }

    /// Request `r`'s GPU phase starts on GPU `g`, a job of its own.
    pub(super) fn start_gpu(&mut self, r: u32, g: usize) {
        let q = &mut self.reqs[r as usize];
        q.gpu = g as u16;
        q.gpu_start = self.now;
        if let Some(t) = self.gpus[g].start(r, q.work, self.now, &self.sc.host.eta) {
            let v = self.gpus[g].version;
            self.at(t, Ev::Gpu(g as u16, v));
        }
    }

    /// Request `r`'s GPU phase ended: its GPU time is counted, its post begins.
    pub(super) fn request_off_gpu(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        if q.measured {
            self.gpu_time.effective += q.work;
            self.gpu_time.overlap += (self.now - q.gpu_start).saturating_sub(q.work);
        }
        self.begin_cpu(r, Phase::Post);
    }
}
