//! The daemon's decisions: a plain [`State`] owned by one actor task, with a
//! method per event and no async, no clock (time is passed in as `now`, in
//! nanoseconds since the daemon started) — so every rule is tested directly.
//!
//! The rules:
//! - **Sessions.** A connection's first message must be HELLO with version 1,
//!   answered WELCOME; anything else first, or a second HELLO, is answered
//!   ERROR(out_of_order), a wrong version ERROR(unsupported_version), and the
//!   connection is dropped as if it had closed.
//! - **Acquire.** Checked in order: batch >= 1, model name 1..=255 bytes (and
//!   at most [`MAX_MODELS`] distinct names per daemon), id not outstanding on
//!   this connection → else REJECT(bad_request); every listed device exists →
//!   else REJECT(no_such_device); fewer than `queue_limit` jobs queued → else
//!   REJECT(overload). Then the job is queued with cost `cost_ns`, or the
//!   estimator's estimate for (model, batch) when 0, and deadline
//!   `now + timeout_ns` when non-zero. Job ids inside the engine are the
//!   daemon's own (never reused), so client ids only need to be unique per
//!   connection.
//! - **Grant.** [`State::dispatch`] runs the policy engine after each batch of
//!   events: every start is a GRANT with the time queued; every drop (deadline
//!   passed, or unreachable under `edf`) a REJECT(deadline). The engine is work
//!   conserving: no job waits while an eligible device has a free slot.
//! - **Release.** RELEASE of a grant frees its slot (the next dispatch hands it
//!   on) and feeds `run_ns`, when non-zero, to the estimator of (model, batch).
//!   RELEASE of any other id (unknown, revoked, still queued) is answered
//!   RELEASED and changes nothing.
//! - **Cancel.** A queued id is withdrawn and answered REJECT(cancelled); an
//!   unknown or granted id is ignored.
//! - **Disconnect.** A connection that closes releases all its grants (cause
//!   `disconnect`) and withdraws its queued jobs at once.
//! - **Max hold.** A grant held longer than `max_hold` is logged and counted
//!   once; with `revoke` it is also taken back (cause `revoke`), the client is
//!   sent REVOKED and the id is dead. [`State::next_wake`] says when the next
//!   hold limit or queued deadline falls due, so the actor sleeps until then.
//! - **Shutdown.** Every queued job is answered REJECT(shutting_down).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use lanes_policy::{
    CostModel, Decision, DeviceId, DeviceSet, DeviceSpec, Job, JobId, ModelId, Nanos, Policy,
    Scheduler,
};
use rustc_hash::FxHashMap;

use crate::error::ArbiterError;
use crate::metrics::{Cause, Counters};
use crate::protocol::{Acquire, ErrorCode, Message, RejectReason, MAX_NAME, VERSION};
use crate::timeline::Timeline;

/// A connection, numbered by the daemon (also its WELCOME session id).
pub type ConnId = u64;

/// Most distinct model names one daemon tracks (each has an estimator entry
/// and a histogram); further names are refused with REJECT(bad_request).
pub const MAX_MODELS: usize = 4096;

/// What a [`State`] is built from.
#[derive(Debug, Clone)]
pub struct StateConfig {
    /// Device names, e.g. `cuda:0` (labels only; index = device number).
    pub devices: Vec<String>,
    pub policy: Policy,
    /// Jobs per device at once (the policy may override, as `limit:K`).
    pub capacity: u32,
    /// Hold limit of a grant, if any.
    pub max_hold: Option<Nanos>,
    /// Take back grants held past `max_hold`.
    pub revoke: bool,
    /// Most jobs queued at once.
    pub queue_limit: usize,
    /// Events kept by the timeline; 0 = no timeline.
    pub trace_events: usize,
}

/// A reply for one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub conn: ConnId,
    pub msg: Message,
}

#[derive(Debug)]
struct Conn {
    /// `None` until HELLO.
    service: Option<String>,
    pid: u32,
    /// Client id → engine job id, for every outstanding acquire and grant.
    jobs: FxHashMap<u64, JobId>,
}

#[derive(Debug, Clone, Copy)]
struct JobInfo {
    conn: ConnId,
    client_id: u64,
    model: ModelId,
    batch: u32,
    arrival: Nanos,
    devices: DeviceSet,
    /// `(device, since)` once granted.
    granted: Option<(DeviceId, Nanos)>,
}

/// The daemon's state (module docs for the rules).
#[derive(Debug)]
pub struct State {
    devices: Vec<String>,
    sched: Scheduler,
    costs: CostModel,
    models: FxHashMap<String, ModelId>,
    model_names: Vec<String>,
    conns: FxHashMap<ConnId, Conn>,
    jobs: FxHashMap<JobId, JobInfo>,
    next_job: JobId,
    max_hold: Option<Nanos>,
    revoke: bool,
    queue_limit: usize,
    /// Queued jobs per eligible set (for per-device queue lengths).
    queued_by_set: FxHashMap<u64, usize>,
    /// `(drop instant, job)` of queued jobs with a deadline; lazily cleaned.
    deadlines: BinaryHeap<Reverse<(Nanos, JobId)>>,
    /// `(hold limit instant, job)` of grants; lazily cleaned.
    holds: BinaryHeap<Reverse<(Nanos, JobId)>>,
    pub(crate) counters: Counters,
    timeline: Option<Timeline>,
    notices: Vec<String>,
    decisions: Vec<Decision>,
}

fn reject(conn: ConnId, id: u64, reason: RejectReason, message: String) -> Out {
    Out {
        conn,
        msg: Message::Reject {
            id,
            reason,
            message,
        },
    }
}

impl State {
    /// A state over `config.devices`.
    pub fn new(config: &StateConfig) -> Result<Self, ArbiterError> {
        let spec = DeviceSpec {
            capacity: config.capacity,
        };
        let sched = Scheduler::new(config.policy, &vec![spec; config.devices.len()])
            .map_err(|e| ArbiterError::BadArgument(e.to_string()))?;
        if config.queue_limit == 0 {
            return Err(ArbiterError::BadArgument(
                "queue_limit = 0: must be at least 1".into(),
            ));
        }
        Ok(Self {
            devices: config.devices.clone(),
            sched,
            costs: CostModel::default(),
            models: FxHashMap::default(),
            model_names: Vec::new(),
            conns: FxHashMap::default(),
            jobs: FxHashMap::default(),
            next_job: 0,
            max_hold: config.max_hold,
            revoke: config.revoke,
            queue_limit: config.queue_limit,
            queued_by_set: FxHashMap::default(),
            deadlines: BinaryHeap::new(),
            holds: BinaryHeap::new(),
            counters: Counters::new(&config.devices),
            timeline: (config.trace_events > 0)
                .then(|| Timeline::new(config.devices.len(), config.trace_events)),
            notices: Vec::new(),
            decisions: Vec::new(),
        })
    }

    /// A new connection, before its HELLO.
    pub fn connect(&mut self, conn: ConnId) {
        self.counters.connection();
        self.conns.insert(
            conn,
            Conn {
                service: None,
                pid: 0,
                jobs: FxHashMap::default(),
            },
        );
    }

    /// Connections open now.
    pub fn clients(&self) -> usize {
        self.conns.len()
    }

    /// Whether `conn` is open (not closed by an error).
    pub fn is_open(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    /// Log lines since the last call (hold limits passed, protocol errors).
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// One message from `conn`. Replies go to `out`; grants wait for [`State::dispatch`].
    pub fn on_message(&mut self, conn: ConnId, msg: Message, now: Nanos, out: &mut Vec<Out>) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return; // closed by an earlier error in the same batch
        };
        let hello = c.service.is_some();
        match msg {
            Message::Hello {
                version,
                pid,
                service,
            } => {
                if hello {
                    return self.fail(
                        conn,
                        ErrorCode::OutOfOrder,
                        "a second HELLO".into(),
                        now,
                        out,
                    );
                }
                if version != VERSION {
                    let why = format!("version {version}: this daemon speaks version {VERSION}");
                    return self.fail(conn, ErrorCode::UnsupportedVersion, why, now, out);
                }
                if service.len() > MAX_NAME {
                    let why = format!(
                        "service name of {} bytes: at most {MAX_NAME}",
                        service.len()
                    );
                    return self.fail(conn, ErrorCode::Malformed, why, now, out);
                }
                c.service = Some(service);
                c.pid = pid;
                out.push(Out {
                    conn,
                    msg: Message::Welcome {
                        version: VERSION,
                        session: conn,
                        devices: self.devices.clone(),
                    },
                });
            }
            _ if !hello => {
                let why = format!("message type 0x{:02x} before HELLO", msg.kind());
                self.fail(conn, ErrorCode::OutOfOrder, why, now, out);
            }
            Message::Acquire(a) => self.acquire(conn, a, now, out),
            Message::Release { id, run_ns } => self.release(conn, id, run_ns, now, out),
            Message::Cancel { id } => self.cancel(conn, id, out),
            Message::Stats => out.push(Out {
                conn,
                msg: Message::StatsReply {
                    json: self.stats_json(now),
                },
            }),
            other => {
                let why = format!(
                    "message type 0x{:02x} is sent by the daemon, not to it",
                    other.kind()
                );
                self.fail(conn, ErrorCode::UnknownType, why, now, out);
            }
        }
    }

    /// Answers ERROR and drops the connection (its grants are released).
    fn fail(&mut self, conn: ConnId, code: ErrorCode, why: String, now: Nanos, out: &mut Vec<Out>) {
        out.push(Out {
            conn,
            msg: Message::Error { code, message: why },
        });
        self.disconnect(conn, Some(code), now);
    }

    fn model_id(&mut self, name: &str) -> Option<ModelId> {
        if let Some(&m) = self.models.get(name) {
            return Some(m);
        }
        if self.model_names.len() >= MAX_MODELS {
            return None;
        }
        let m = self.model_names.len() as ModelId;
        self.models.insert(name.to_owned(), m);
        self.model_names.push(name.to_owned());
        self.counters.add_model(name);
        Some(m)
    }

    fn acquire(&mut self, conn: ConnId, a: Acquire, now: Nanos, out: &mut Vec<Out>) {
        let bad = |why: String| reject(conn, a.id, RejectReason::BadRequest, why);
        let refused = if a.batch == 0 {
            Some(bad("batch 0: must be at least 1".into()))
        } else if a.model.is_empty() || a.model.len() > MAX_NAME {
            Some(bad(format!(
                "model name of {} bytes: must be 1..={MAX_NAME}",
                a.model.len()
            )))
        } else if self.conns[&conn].jobs.contains_key(&a.id) {
            Some(bad(format!(
                "id {} is already queued or granted on this connection",
                a.id
            )))
        } else if let Some(&d) = a
            .devices
            .iter()
            .find(|&&d| d as usize >= self.devices.len())
        {
            Some(reject(
                conn,
                a.id,
                RejectReason::NoSuchDevice,
                format!(
                    "device {d}: this daemon has devices 0..{}",
                    self.devices.len() - 1
                ),
            ))
        } else if self.sched.queued() >= self.queue_limit {
            Some(reject(
                conn,
                a.id,
                RejectReason::Overload,
                format!(
                    "{} jobs queued: the queue limit is {}",
                    self.sched.queued(),
                    self.queue_limit
                ),
            ))
        } else {
            None
        };
        if let Some(r) = refused {
            if let Message::Reject { reason, .. } = r.msg {
                self.counters.reject(reason);
            }
            out.push(r);
            return;
        }
        let Some(model) = self.model_id(&a.model) else {
            self.counters.reject(RejectReason::BadRequest);
            out.push(bad(format!(
                "model '{}': more than {MAX_MODELS} model names",
                a.model
            )));
            return;
        };
        let devices = if a.devices.is_empty() {
            self.sched.all_devices()
        } else {
            a.devices.iter().map(|&d| d as DeviceId).collect()
        };
        let cost = if a.cost_ns > 0 {
            a.cost_ns
        } else {
            self.costs.estimate(model, a.batch)
        };
        let id = self.next_job;
        self.next_job += 1;
        let mut job = Job::new(id, model, cost, now, devices).with_batch(a.batch);
        if a.timeout_ns > 0 {
            let deadline = now.saturating_add(a.timeout_ns);
            job = job.with_deadline(deadline);
            let drop_at = match self.sched.policy() {
                Policy::Edf => deadline.saturating_sub(cost),
                _ => deadline,
            };
            self.deadlines.push(Reverse((drop_at, id)));
        }
        self.sched
            .submit(job)
            .expect("submit: fresh id, devices checked");
        *self.queued_by_set.entry(devices.0).or_default() += 1;
        self.jobs.insert(
            id,
            JobInfo {
                conn,
                client_id: a.id,
                model,
                batch: a.batch,
                arrival: now,
                devices,
                granted: None,
            },
        );
        if let Some(c) = self.conns.get_mut(&conn) {
            c.jobs.insert(a.id, id);
        }
    }

    fn unqueue(&mut self, devices: DeviceSet) {
        if let Some(n) = self.queued_by_set.get_mut(&devices.0) {
            *n -= 1;
            if *n == 0 {
                self.queued_by_set.remove(&devices.0);
            }
        }
    }

    /// Frees the slot of a granted job; the caller has removed it from its connection.
    fn finish(&mut self, id: JobId, cause: Cause, now: Nanos) -> Option<JobInfo> {
        let info = self.jobs.remove(&id)?;
        let (device, since) = info.granted?;
        let _ = self.sched.complete(id, now);
        self.counters.release(cause);
        if let Some(t) = &mut self.timeline {
            let c = &self.conns.get(&info.conn);
            let service = c.and_then(|c| c.service.as_deref()).unwrap_or("");
            t.slice(
                device,
                since,
                now,
                &self.model_names[info.model as usize],
                service,
                info.client_id,
                info.batch,
                cause,
            );
            t.count(device, now, self.sched.running_on(device));
        }
        Some(info)
    }

    fn release(&mut self, conn: ConnId, id: u64, run_ns: u64, now: Nanos, out: &mut Vec<Out>) {
        let c = self.conns.get_mut(&conn).expect("open connection");
        if let Some(&job) = c.jobs.get(&id) {
            if self.jobs.get(&job).is_some_and(|j| j.granted.is_some()) {
                c.jobs.remove(&id);
                if let Some(info) = self.finish(job, Cause::Release, now) {
                    if run_ns > 0 {
                        self.costs.observe(info.model, info.batch, run_ns);
                    }
                }
            }
        }
        out.push(Out {
            conn,
            msg: Message::Released { id },
        });
    }

    fn cancel(&mut self, conn: ConnId, id: u64, out: &mut Vec<Out>) {
        let c = self.conns.get_mut(&conn).expect("open connection");
        let Some(&job) = c.jobs.get(&id) else { return };
        if self.sched.cancel(job).is_none() {
            return; // granted: release it instead
        }
        c.jobs.remove(&id);
        if let Some(info) = self.jobs.remove(&job) {
            self.unqueue(info.devices);
        }
        self.counters.reject(RejectReason::Cancelled);
        out.push(reject(
            conn,
            id,
            RejectReason::Cancelled,
            "cancelled".into(),
        ));
    }

    /// A connection closed (or failed with `error`): its grants are released
    /// and its queued jobs withdrawn. Unknown connections are ignored.
    pub fn disconnect(&mut self, conn: ConnId, error: Option<ErrorCode>, now: Nanos) {
        if let Some(code) = error {
            self.counters.protocol_error(code);
        }
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let jobs = std::mem::take(&mut c.jobs);
        for (_, job) in jobs {
            if self.sched.cancel(job).is_some() {
                if let Some(info) = self.jobs.remove(&job) {
                    self.unqueue(info.devices);
                }
            } else {
                self.finish(job, Cause::Disconnect, now);
            }
        }
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        if let Some(code) = error {
            self.notices.push(format!(
                "connection {conn} ({} pid {}) closed: protocol error {code}",
                c.service.as_deref().unwrap_or("no HELLO"),
                c.pid
            ));
        }
    }

    /// Grants and deadline drops that can be decided at `now`.
    pub fn dispatch(&mut self, now: Nanos, out: &mut Vec<Out>) {
        let mut decisions = std::mem::take(&mut self.decisions);
        decisions.clear();
        self.sched.dispatch(now, &mut decisions);
        for d in &decisions {
            match *d {
                Decision::Run { job, device } => {
                    let Some(info) = self.jobs.get_mut(&job.id) else {
                        continue;
                    };
                    info.granted = Some((device, now));
                    let (conn, id, model, devices) =
                        (info.conn, info.client_id, info.model, info.devices);
                    let wait = now.saturating_sub(info.arrival);
                    self.unqueue(devices);
                    self.counters.grant(model, wait);
                    if let Some(limit) = self.max_hold {
                        self.holds
                            .push(Reverse((now.saturating_add(limit), job.id)));
                    }
                    if let Some(t) = &mut self.timeline {
                        t.count(device, now, self.sched.running_on(device));
                    }
                    out.push(Out {
                        conn,
                        msg: Message::Grant {
                            id,
                            device: device as u16,
                            wait_ns: wait,
                        },
                    });
                }
                Decision::Drop { job, .. } => {
                    let Some(info) = self.jobs.remove(&job.id) else {
                        continue;
                    };
                    self.unqueue(info.devices);
                    if let Some(c) = self.conns.get_mut(&info.conn) {
                        c.jobs.remove(&info.client_id);
                    }
                    self.counters.reject(RejectReason::Deadline);
                    let why = match self.sched.policy() {
                        Policy::Edf => "deadline cannot be met",
                        _ => "deadline passed while queued",
                    };
                    out.push(reject(
                        info.conn,
                        info.client_id,
                        RejectReason::Deadline,
                        why.into(),
                    ));
                }
            }
        }
        self.decisions = decisions;
    }

    /// Grants past the hold limit at `now`: logged and counted, revoked with `revoke`.
    pub fn tick(&mut self, now: Nanos, out: &mut Vec<Out>) {
        let Some(limit) = self.max_hold else { return };
        while let Some(&Reverse((at, job))) = self.holds.peek() {
            if at > now {
                break;
            }
            self.holds.pop();
            let Some(info) = self.jobs.get(&job).copied() else {
                continue;
            };
            let Some((device, _)) = info.granted else {
                continue;
            };
            self.counters.hold_exceeded();
            let (service, pid) = self
                .conns
                .get(&info.conn)
                .map_or(("?", 0), |c| (c.service.as_deref().unwrap_or("?"), c.pid));
            let what = format!(
                "grant {} of {service} (pid {pid}, model {}) on {} held past --max-hold {} ms",
                info.client_id,
                self.model_names[info.model as usize],
                self.devices[device],
                limit / 1_000_000
            );
            if self.revoke {
                self.notices.push(format!("{what}: revoked"));
                if let Some(c) = self.conns.get_mut(&info.conn) {
                    c.jobs.remove(&info.client_id);
                }
                self.finish(job, Cause::Revoke, now);
                out.push(Out {
                    conn: info.conn,
                    msg: Message::Revoked { id: info.client_id },
                });
            } else {
                self.notices.push(what);
            }
        }
    }

    /// When the next hold limit or queued deadline falls due, if any.
    pub fn next_wake(&mut self) -> Option<Nanos> {
        while let Some(&Reverse((_, job))) = self.deadlines.peek() {
            if self.jobs.get(&job).is_some_and(|j| j.granted.is_none()) {
                break;
            }
            self.deadlines.pop();
        }
        while let Some(&Reverse((_, job))) = self.holds.peek() {
            if self.jobs.get(&job).is_some_and(|j| j.granted.is_some()) {
                break;
            }
            self.holds.pop();
        }
        // The engine drops a job once `now` is past its drop instant.
        let deadline = self
            .deadlines
            .peek()
            .map(|Reverse((at, _))| at.saturating_add(1));
        let hold = self.holds.peek().map(|Reverse((at, _))| *at);
        match (deadline, hold) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Answers every queued job REJECT(shutting_down) and withdraws it.
    pub fn shutdown(&mut self, out: &mut Vec<Out>) {
        let queued: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.granted.is_none())
            .map(|(&id, _)| id)
            .collect();
        for job in queued {
            let _ = self.sched.cancel(job);
            let Some(info) = self.jobs.remove(&job) else {
                continue;
            };
            self.unqueue(info.devices);
            if let Some(c) = self.conns.get_mut(&info.conn) {
                c.jobs.remove(&info.client_id);
            }
            self.counters.reject(RejectReason::ShuttingDown);
            out.push(reject(
                info.conn,
                info.client_id,
                RejectReason::ShuttingDown,
                "the arbiter is shutting down".into(),
            ));
        }
    }
}

mod report;

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
