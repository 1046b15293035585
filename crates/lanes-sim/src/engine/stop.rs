//! The hypervisor's stops (`host.stop_ms`): a core of the guest taken away
//! whole for a while.
//!
//! **Rule.** Each of the `cpu_cores` cores stops `stops_per_s` times a second
//! on average, plus one draw per run of `host.stop_run_per_s` (its own seeded
//! stream): together a Poisson process of `cpu_cores` times that rate, whose
//! gaps and stop lengths (a draw of `host.stop_ms`) come from a stream of
//! their own. At a stop the time-sliced cores lose a core and set aside the
//! phase that ran on it, if one did ([`crate::host::SlicedCores::stop`]);
//! at its end the core is back and the phase runs on
//! ([`crate::host::SlicedCores::resume`]). Stops come while requests remain
//! to arrive or are in flight, as background slices do.

use super::event::Ev;
use super::Sim;
use crate::config::Scenario;
use crate::host::Frozen;
use crate::workload::Quantiles;
use rand::Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use rand_pcg::Pcg64Mcg;

/// One run's stops: their process and the phases they hold.
#[derive(Debug)]
pub(super) struct Stops {
    lengths: Quantiles,
    /// Gaps between stops on any core, ns.
    gaps: Exp<f64>,
    rng: Pcg64Mcg,
    /// The phase each stop in progress set aside, by slot.
    held: Vec<Option<Frozen>>,
    free: Vec<u32>,
}

impl Stops {
    /// The stops of the run seeded `seed`, or `None` without `host.stop_ms`.
    pub(super) fn new(sc: &Scenario, seed: u64) -> Option<Self> {
        let lengths = Quantiles::new(&sc.host.stop_ms)?;
        let extra = Quantiles::new(&sc.host.stop_run_per_s).map_or(0.0, |q| {
            let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0057_090F_5EC0);
            // Quantiles keeps its points x 1e6 (ms as ns); these are per s.
            q.at(rng.random::<f64>()) / 1e6
        });
        let per_ns = (sc.host.stops_per_s + extra) * sc.host.cpu_cores as f64 / 1e9;
        Some(Self {
            lengths,
            gaps: Exp::new(per_ns).ok()?,
            rng: Pcg64Mcg::seed_from_u64(seed ^ 0x5709_0A11),
            held: Vec::new(),
            free: Vec::new(),
        })
    }

    /// When the first stop comes, ns from the start.
    pub(super) fn first(&mut self) -> u64 {
        self.gaps.sample(&mut self.rng).round() as u64
    }
}

impl Sim<'_> {
    /// A core stops (`Ev::Stop`): the cores set a phase aside, the stop's
    /// end is scheduled, and so is the next stop while work remains.
    pub(super) fn on_stop(&mut self) {
        if !self.work_remains() {
            return;
        }
        let stops = self.stops.as_mut().expect("only with host.stop_ms");
        let length = stops.lengths.sample(&mut stops.rng);
        let (hit, pick) = (stops.rng.random::<f64>(), stops.rng.random::<f64>());
        let next = self.now + stops.gaps.sample(&mut stops.rng).round() as u64;
        let cores = self
            .sliced
            .as_mut()
            .expect("host.stop_ms needs time slicing");
        let (frozen, end) = cores.stop(self.now, hit, pick);
        let v = cores.version();
        let slot = match stops.free.pop() {
            Some(slot) => {
                stops.held[slot as usize] = frozen;
                slot
            }
            None => {
                stops.held.push(frozen);
                (stops.held.len() - 1) as u32
            }
        };
        if let Some(t) = end {
            self.at(t, Ev::Cores(v));
        }
        self.at(self.now + length, Ev::Resume(slot));
        self.at(next, Ev::Stop);
    }

    /// A stop ends (`Ev::Resume`): its core is back and the phase it set
    /// aside runs on.
    pub(super) fn on_resume(&mut self, slot: u32) {
        let stops = self.stops.as_mut().expect("only with host.stop_ms");
        let frozen = stops.held[slot as usize].take();
        stops.free.push(slot);
        let cores = self
            .sliced
            .as_mut()
            .expect("host.stop_ms needs time slicing");
        if let Some(t) = cores.resume(frozen, self.now) {
            let v = cores.version();
            self.at(t, Ev::Cores(v));
        }
    }
}
