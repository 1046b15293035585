//! The probing loop: the rounds, reloads and reports of one run, on the
//! thread [`crate::monitor::Monitor`] starts.
//!
//! The loop's rules:
//! - The first round starts at once; the next ones on a fixed grid, one every
//!   interval from the start. A round that overruns skips grid points rather
//!   than bunching rounds up.
//! - Before each round the targets file is reloaded when asked
//!   (`Monitor::reload`, which the CLI calls on SIGHUP) or when it changed
//!   (modification time, length or inode). A file that fails to load is
//!   reported and the previous targets are kept. Targets that stay keep their
//!   state; new ones report their initial state after their first round;
//!   removed ones are forgotten.
//! - After each round: every transition as an [`Event`], then a
//!   [`RoundReport`], then warnings (kernel drops, probes that failed on our
//!   side). The metrics are updated at the same time.
//! - A stop ends the loop at once, abandoning a round in progress; so does a
//!   round bound, or the caller dropping its handle.
//!
//! The prober is opened here too: `syn`, or `connect` when `syn` lacks
//! privilege, with a warning saying so.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::{Mode, ProbeConfig};
use crate::connect;
use crate::error::ProbeError;
use crate::message::{Event, Message, Notice, RoundReport};
use crate::metrics::Metrics;
use crate::sockets::BufferReport;
use crate::state::{Outcome, State, Tracker, Transition};
use crate::syn::{self, OpenError, SynOptions, SynPlan, SynProber};
use crate::targets::{self, Target, Watch};

/// What the handle tells the loop: stop, reload; `wake` interrupts a wait.
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub(crate) stop: AtomicBool,
    pub(crate) reload: AtomicBool,
    pub(crate) wake: Notify,
}

/// The prober in use.
#[derive(Debug)]
pub(crate) enum Prober {
    Syn(Box<SynProber>),
    Connect,
}

/// The targets with their trackers, split by how they are probed.
#[derive(Debug, Default)]
pub(crate) struct Fleet {
    targets: Vec<Target>,
    trackers: Vec<Tracker>,
    syn: SynPlan,
    pub(crate) connect: Vec<(usize, SocketAddr)>,
}

/// Splits `targets` by how `mode` probes them (blocking: route lookups).
pub(crate) fn plan(targets: Vec<Target>, mode: Mode) -> Fleet {
    let (syn, connect) = match mode {
        Mode::Syn => SynPlan::build(&targets),
        Mode::Connect => (
            SynPlan::default(),
            targets.iter().map(|t| t.addr).enumerate().collect(),
        ),
    };
    Fleet {
        trackers: vec![Tracker::default(); targets.len()],
        targets,
        syn,
        connect,
    }
}

impl Fleet {
    /// Takes the trackers of targets that stay from `old`; returns (added, removed).
    fn inherit(&mut self, old: Fleet) -> (usize, usize) {
        let mut by_key: std::collections::HashMap<String, Tracker> = old
            .targets
            .into_iter()
            .map(|t| t.key)
            .zip(old.trackers)
            .collect();
        let before = by_key.len();
        let mut kept = 0;
        for (t, tracker) in self.targets.iter().zip(self.trackers.iter_mut()) {
            if let Some(old) = by_key.remove(&t.key) {
                *tracker = old;
                kept += 1;
            }
        }
        (self.targets.len() - kept, before - kept)
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn buffer_notices(b: &BufferReport, targets: usize, fixed: bool) -> Vec<Notice> {
    let how = if b.forced {
        "SO_RCVBUFFORCE"
    } else {
        "SO_RCVBUF"
    };
    let mut out = vec![Notice::info(format!(
        "reply socket receive buffer: {} bytes effective ({} wanted, set with {how})",
        b.effective, b.wanted
    ))];
    let need = syn::wanted_buffer(targets);
    if !b.forced && b.capped() {
        let max = b.rmem_max.map_or("unknown".into(), |m| m.to_string());
        out.push(Notice::warning(format!(
            "the receive buffer is capped at {} bytes by net.core.rmem_max ({max}) and the \
             replies of {targets} targets can take {need}: replies may be dropped; raise it \
             (sysctl -w net.core.rmem_max={need}) or grant CAP_NET_ADMIN",
            b.effective
        )));
    } else if fixed && b.effective < need {
        out.push(Notice::warning(format!(
            "the receive buffer is {} bytes as configured, below the {need} bytes the replies \
             of {targets} targets can take: replies may be dropped (counted each round as \
             kernel drops)",
            b.effective
        )));
    }
    out
}

/// Opens the prober for `config`: the mode in use and what to log.
pub(crate) fn open(
    config: &ProbeConfig,
    targets: usize,
) -> Result<(Prober, Vec<Notice>), ProbeError> {
    if config.mode == Mode::Connect {
        return Ok((
            Prober::Connect,
            vec![Notice::info(
                "connect mode: a full connect per probe, reset at once",
            )],
        ));
    }
    let options = SynOptions {
        recv_buffer: config.recv_buffer,
        simulate_no_raw: config.simulate_no_raw,
    };
    match SynProber::open(options, targets) {
        Ok(p) => {
            let mut notices = vec![Notice::info(format!(
                "syn mode: half-open probes from port {}",
                p.port()
            ))];
            notices.extend(buffer_notices(
                &p.buffer(),
                targets,
                config.recv_buffer.is_some(),
            ));
            Ok((Prober::Syn(Box::new(p)), notices))
        }
        Err(OpenError::NoPrivilege(why)) => Ok((
            Prober::Connect,
            vec![Notice::warning(format!(
                "syn mode needs CAP_NET_RAW for its raw and packet sockets ({why}): probing in \
                 connect mode instead (a full connect per probe, reset at once); run as root \
                 or grant it (setcap cap_net_raw,cap_net_admin+ep on the interpreter)"
            ))],
        )),
        Err(OpenError::Failed(why)) => Err(ProbeError::Socket(format!("syn mode: {why}"))),
    }
}

/// The loop's state (module docs).
pub(crate) struct Loop {
    pub(crate) config: ProbeConfig,
    pub(crate) mode: Mode,
    pub(crate) prober: Prober,
    pub(crate) fleet: Fleet,
    pub(crate) watch: Watch,
    pub(crate) control: Arc<Control>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) tx: flume::Sender<Message>,
}

impl Loop {
    fn say(&self, message: Message) -> bool {
        self.tx.send(message).is_ok()
    }

    async fn reload(&mut self) {
        self.watch.mark();
        let path = self.config.targets.clone();
        let mode = self.mode;
        let loaded =
            tokio::task::spawn_blocking(move || targets::load(&path).map(|t| plan(t, mode))).await;
        let notice = match loaded {
            Ok(Ok(mut fleet)) => {
                let old = std::mem::take(&mut self.fleet);
                let (added, removed) = fleet.inherit(old);
                self.fleet = fleet;
                let n = self.fleet.targets.len();
                let mut text = format!(
                    "targets reloaded from {}: {n} targets ({added} added, {removed} removed)",
                    self.config.targets.display()
                );
                if let Prober::Syn(p) = &mut self.prober {
                    match p.fit(n) {
                        Ok(Some(b)) => text.push_str(&format!(
                            "; receive buffer now {} bytes ({} wanted)",
                            b.effective, b.wanted
                        )),
                        Ok(None) => {}
                        Err(e) => text.push_str(&format!("; receive buffer not resized: {e}")),
                    }
                }
                Notice::info(text)
            }
            Ok(Err(e)) => Notice::warning(format!(
                "targets not reloaded: {e}; keeping the previous {} targets",
                self.fleet.targets.len()
            )),
            Err(e) => Notice::warning(format!("targets not reloaded: {e}")),
        };
        self.say(Message::Notice(notice));
    }

    /// Probes every target once; the outcomes by fleet index and the report's counts.
    async fn probe(
        &mut self,
        round: u64,
    ) -> Result<(Vec<Outcome>, RoundReport, Vec<Notice>), ProbeError> {
        let n = self.fleet.targets.len();
        let (timeout, concurrency) = (self.config.timeout, self.config.connect_concurrency);
        let mut outcomes = vec![Outcome::Unknown; n];
        let mut by_connect = vec![Outcome::Unknown; n];
        let mut report = RoundReport {
            round,
            targets: n as u64,
            ..RoundReport::default()
        };
        let mut notices = Vec::new();
        let fleet = &self.fleet;
        let conn = match &mut self.prober {
            Prober::Syn(p) => {
                let (s, c) = tokio::join!(
                    p.round(round, &fleet.syn, timeout, &mut outcomes),
                    connect::round(&fleet.connect, timeout, concurrency, &mut by_connect),
                );
                let s = s.map_err(|e| ProbeError::Socket(format!("syn round {round}: {e}")))?;
                report.sent += s.sent;
                report.replies += s.synacks + s.resets;
                report.late = s.late;
                report.duplicates = s.duplicates;
                report.strays = s.strays;
                report.errors += s.send_errors;
                report.kernel_packets = s.kernel.packets;
                report.kernel_drops = s.kernel.drops;
                if let Some(e) = s.first_send_error {
                    notices.push(Notice::warning(format!(
                        "round {round}: {} SYNs could not be sent ({e}); those targets count as unknown",
                        s.send_errors
                    )));
                }
                if s.kernel.drops > 0 {
                    notices.push(Notice::warning(format!(
                        "round {round}: the kernel dropped {} of {} replies for want of receive \
                         buffer ({} bytes); silent targets of this round count as unknown, not \
                         down; raise net.core.rmem_max or the receive buffer",
                        s.kernel.drops,
                        s.kernel.packets,
                        p.buffer().effective
                    )));
                }
                for &(i, _) in &fleet.connect {
                    outcomes[i] = by_connect[i];
                }
                c
            }
            Prober::Connect => {
                connect::round(&fleet.connect, timeout, concurrency, &mut outcomes).await
            }
        };
        report.sent += conn.attempts;
        report.replies += conn.accepted + conn.refused;
        report.errors += conn.errors;
        if let Some(e) = conn.first_error {
            notices.push(Notice::warning(format!(
                "round {round}: {} connects failed on our side ({e}); those targets count as unknown",
                conn.errors
            )));
        }
        for o in &outcomes {
            match o {
                Outcome::Accepted => report.accepted += 1,
                Outcome::Refused => report.refused += 1,
                Outcome::Timeout => report.timeouts += 1,
                Outcome::Unknown => report.unknown += 1,
            }
        }
        Ok((outcomes, report, notices))
    }

    /// Applies a round's outcomes: events, report, metrics. False when the caller is gone.
    fn apply(
        &mut self,
        round: u64,
        outcomes: &[Outcome],
        mut report: RoundReport,
        notices: Vec<Notice>,
    ) -> bool {
        let at = unix_now();
        let th = self.config.thresholds;
        let mut transitions: Vec<Transition> = Vec::new();
        let mut events = Vec::new();
        for ((t, tracker), outcome) in self
            .fleet
            .targets
            .iter()
            .zip(self.fleet.trackers.iter_mut())
            .zip(outcomes)
        {
            if let Some(tr) = tracker.observe(round, *outcome, &th) {
                transitions.push(tr);
                events.push(Message::Event(Event {
                    target: t.key.clone(),
                    name: t.name.clone(),
                    state: tr.to,
                    previous: tr.from,
                    at,
                    round,
                }));
            }
            match tracker.state() {
                Some(State::Up) => report.up += 1,
                Some(State::Down) => report.down += 1,
                Some(State::Refused) => report.refused_targets += 1,
                None => report.pending += 1,
            }
        }
        report.transitions = transitions.len() as u64;
        self.metrics.record(&report, &transitions);
        events
            .into_iter()
            .chain(std::iter::once(Message::Round(report)))
            .chain(notices.into_iter().map(Message::Notice))
            .all(|m| self.say(m))
    }

    pub(crate) async fn run(mut self) -> Result<(), ProbeError> {
        let start = Instant::now();
        let interval = self.config.interval;
        let mut round = 0u64;
        loop {
            if round > 0 {
                let periods = start.elapsed().as_nanos() / interval.as_nanos() + 1;
                let due = start + interval * u32::try_from(periods).unwrap_or(u32::MAX);
                tokio::select! {
                    () = tokio::time::sleep_until(due) => {}
                    () = self.control.wake.notified() => {}
                }
            }
            if self.control.stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            if self.control.reload.swap(false, Ordering::SeqCst) || self.watch.changed() {
                self.reload().await;
            }
            let began = Instant::now();
            let control = self.control.clone();
            let probed = tokio::select! {
                probed = self.probe(round) => probed?,
                () = control.wake.notified() => return Ok(()),
            };
            let (outcomes, mut report, notices) = probed;
            report.duration_s = began.elapsed().as_secs_f64();
            if !self.apply(round, &outcomes, report, notices) {
                return Ok(());
            }
            round += 1;
            if self.config.rounds.is_some_and(|r| round >= r) {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(key: &str) -> Target {
        Target {
            key: key.into(),
            name: None,
            addr: key.parse().unwrap(),
        }
    }

    #[test]
    fn reload_keeps_the_state_of_targets_that_stay() {
        let th = crate::state::Thresholds {
            down_after: 1,
            up_after: 1,
            flap_window: 10,
        };
        let mut old = plan(
            vec![target("127.0.0.1:1"), target("127.0.0.1:2")],
            Mode::Connect,
        );
        old.trackers[0].observe(0, Outcome::Accepted, &th);
        old.trackers[1].observe(0, Outcome::Refused, &th);
        let mut new = plan(
            vec![target("127.0.0.1:3"), target("127.0.0.1:2")],
            Mode::Connect,
        );
        assert_eq!(new.inherit(old), (1, 1));
        assert_eq!(new.trackers[0].state(), None);
        assert_eq!(new.trackers[1].state(), Some(State::Refused));
        assert_eq!(new.connect.len(), 2);
    }

    #[test]
    fn buffer_warnings_name_rmem_max() {
        let capped = BufferReport {
            wanted: 4 << 20,
            effective: 425_984,
            forced: false,
            rmem_max: Some(212_992),
        };
        let n = buffer_notices(&capped, 2048, false);
        assert_eq!(n.len(), 2);
        assert!(
            n[1].message.contains("net.core.rmem_max (212992)"),
            "{:?}",
            n[1]
        );
        let small = BufferReport {
            wanted: 65536,
            effective: 65536,
            forced: true,
            rmem_max: None,
        };
        let n = buffer_notices(&small, 10_000, true);
        assert!(
            n[1].message.contains("below the 20480000 bytes"),
            "{:?}",
            n[1]
        );
        let fine = BufferReport {
            wanted: 1 << 20,
            effective: 1 << 20,
            forced: true,
            rmem_max: None,
        };
        assert_eq!(buffer_notices(&fine, 10, false).len(), 1);
    }
}
