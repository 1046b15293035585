//! Device grants from `lanes arbiter` (`lanes serve --arbiter unix:PATH`):
//! the driver's link to the host daemon (docs/arbiter.md), so several
//! processes share the devices without overlapping, in the daemon's order.
//!
//! **Rule.** The serving state (`Grants::External`) keeps one ask standing
//! per ready model (its next batch). The link carries each ask to the daemon
//! as ACQUIRE — the job id as the wire id, the rows, the local cost estimate,
//! the earliest queued deadline as the timeout, the eligible devices mapped
//! by name onto the daemon's list — and each GRANT or REJECT back to the
//! driver ([`Event`]). A finished batch is RELEASEd with its measured run
//! time (0 when it failed or ran nothing), after the model's next ACQUIRE, so
//! the daemon sees the model waiting when it decides who goes next. A
//! withdrawn ask is CANCELled; a grant that crosses the cancel is released at
//! once.
//!
//! **While the daemon is down** (not reached yet, connection lost, or it
//! answered SHUTTING_DOWN) asks follow the [`Fallback`]:
//! - `fail_open`: this process alone at `limit:1` per device — an ask takes
//!   the first free eligible device, else waits in arrival order; a freed
//!   device goes to the oldest waiter that may use it;
//! - `fail_closed`: an ask waits for the daemon up to its deadline, then is
//!   refused (503).
//!
//! Asks queued at the daemon when the connection drops go round again (the
//! fallback); grants held then are forgotten (the daemon released them with
//! the connection). The link reconnects with exponential backoff; when the
//! daemon is back, waiting asks go to it in order.
//!
//! **Logs.** The link tells the host's logs (an [`Event::Notice`], kept by
//! the observer for `lanes serve`'s logger) once per change of the daemon's
//! state — unreachable, connected or back (naming this server's devices the
//! daemon does not grant), connection lost — with what happens meanwhile, and
//! every refusal other than a missed deadline (those are 504s, as expected
//! under load).
//!
//! [`Book`] holds every decision, tested without I/O; [`Link::start`] runs
//! it on the socket.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lanes_arbiter::protocol::{Acquire, RejectReason, VERSION};
use lanes_arbiter::{decode, encode_frame, frame_len, Message};
use lanes_policy::{DeviceId, DeviceSet, JobId, Nanos};
use lanes_serving::Refusal;
use rustc_hash::FxHashMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::clock::{sleep_until, Clock};
use crate::observe::Notice;

/// What a server does while the daemon is down (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    FailOpen,
    FailClosed,
}

impl std::str::FromStr for Fallback {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fail_open" => Ok(Self::FailOpen),
            "fail_closed" => Ok(Self::FailClosed),
            _ => Err(format!(
                "fallback '{s}': allowed are fail_open, fail_closed"
            )),
        }
    }
}

/// Where the grants come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArbiterConfig {
    /// The daemon's Unix socket.
    pub path: PathBuf,
    /// This process's name in the daemon's stats.
    pub service: String,
    pub fallback: Fallback,
    /// Reconnect backoff: the first pause, and its cap (doubling between).
    pub backoff: (Duration, Duration),
}

impl ArbiterConfig {
    /// The daemon at `path`, with the default backoff (50 ms doubling to 2 s).
    pub fn new(path: impl Into<PathBuf>, service: &str, fallback: Fallback) -> Self {
        Self {
            path: path.into(),
            service: service.to_owned(),
            fallback,
            backoff: (Duration::from_millis(50), Duration::from_secs(2)),
        }
    }
}

/// How long a connect plus HELLO → WELCOME may take.
const HANDSHAKE: Duration = Duration::from_secs(1);

/// An ask of the serving state, as the link keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub model: Arc<str>,
    pub rows: u32,
    pub cost: Nanos,
    pub deadline: Option<Nanos>,
    pub devices: DeviceSet,
}

/// The driver → link messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Ask {
        job: JobId,
        ask: Ask,
    },
    Withdraw {
        job: JobId,
    },
    /// `run` ns measured (0: failed or ran nothing).
    Release {
        job: JobId,
        run: Nanos,
    },
}

/// The link → driver messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Granted {
        job: JobId,
        device: DeviceId,
    },
    Refused {
        job: JobId,
        refusal: Refusal,
    },
    /// A line for the host's logs: the daemon unreachable, lost, back, or a
    /// refusal other than a missed deadline.
    Notice(Notice),
}

/// What a [`Book`] decision asks the I/O to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write this frame (dropped when the connection is down).
    Send(Message),
    /// Hand this to the driver.
    Deliver(Event),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// ACQUIRE sent on connection `conn`.
    Asked { conn: u64 },
    /// Granted by the daemon on connection `conn`.
    Held { conn: u64 },
    /// Waiting for the daemon (`fail_closed`) or a local device (`fail_open`).
    Waiting,
    /// A device of the local fallback.
    Local(DeviceId),
    /// Granted on a connection since lost: its release goes nowhere.
    Orphan,
}

/// Every decision of the link (module docs), without I/O.
#[derive(Debug)]
pub struct Book {
    fallback: Fallback,
    path: String,
    /// The server's device names, by local id.
    names: Vec<String>,
    jobs: FxHashMap<JobId, (Ask, Place)>,
    /// Asks waiting, oldest first.
    waiting: VecDeque<JobId>,
    /// `fail_open`'s devices held in this process.
    busy: Vec<bool>,
    /// The live connection and its local → daemon device map.
    conn: Option<(u64, Vec<Option<u16>>)>,
    /// What the logs were last told: up (true), down (false), nothing yet.
    told: Option<bool>,
}

impl Book {
    pub fn new(fallback: Fallback, path: String, names: Vec<String>) -> Self {
        let busy = vec![false; names.len()];
        Self {
            fallback,
            path,
            names,
            jobs: FxHashMap::default(),
            waiting: VecDeque::new(),
            busy,
            conn: None,
            told: None,
        }
    }

    /// What this process does while the daemon is down, in words.
    fn meanwhile(&self) -> &'static str {
        match self.fallback {
            Fallback::FailOpen => "meanwhile one batch at a time per device here (fail_open)",
            Fallback::FailClosed => {
                "meanwhile requests wait for it until their deadline, then 503 (fail_closed)"
            }
        }
    }

    fn tell(&mut self, up: bool, message: String, out: &mut Vec<Effect>) {
        self.told = Some(up);
        out.push(Effect::Deliver(Event::Notice(Notice {
            warning: !up,
            message,
        })));
    }

    /// A connection attempt failed: said once per time the daemon is away.
    pub fn unreachable(&mut self, out: &mut Vec<Effect>) {
        if self.told != Some(false) {
            let m = format!(
                "lanes arbiter at {} is not reachable; {}",
                self.path,
                self.meanwhile()
            );
            self.tell(false, m, out);
        }
    }

    /// Whether a connection to the daemon is up.
    pub fn connected(&self) -> bool {
        self.conn.is_some()
    }

    pub fn request(&mut self, now: Nanos, r: Request, out: &mut Vec<Effect>) {
        match r {
            Request::Ask { job, ask } => {
                self.jobs.insert(job, (ask, Place::Waiting));
                self.place(now, job, out);
            }
            Request::Withdraw { job } => self.forget(job, 0, true, out),
            Request::Release { job, run } => self.forget(job, run, false, out),
        }
    }

    /// Sends `job` to the daemon, or to the fallback while it is down.
    fn place(&mut self, now: Nanos, job: JobId, out: &mut Vec<Effect>) {
        let Some((ask, place)) = self.jobs.get_mut(&job) else {
            return;
        };
        if let Some((conn, map)) = &self.conn {
            let devices: Vec<u16> = ask.devices.iter().filter_map(|d| map[d]).collect();
            if devices.is_empty() {
                let message = format!(
                    "none of its devices ({}) is one of the arbiter's",
                    ask.devices
                        .iter()
                        .map(|d| self.names[d].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.jobs.remove(&job);
                out.push(refused(job, message));
                return;
            }
            *place = Place::Asked { conn: *conn };
            out.push(Effect::Send(Message::Acquire(Acquire {
                id: job,
                model: ask.model.to_string(),
                batch: ask.rows.max(1),
                cost_ns: ask.cost,
                timeout_ns: ask.deadline.map_or(0, |d| d.saturating_sub(now).max(1)),
                devices,
            })));
            return;
        }
        *place = Place::Waiting;
        let eligible = ask.devices;
        if self.fallback == Fallback::FailOpen {
            if let Some(d) = eligible.iter().find(|&d| !self.busy[d]) {
                self.busy[d] = true;
                self.jobs.get_mut(&job).expect("just found").1 = Place::Local(d);
                out.push(Effect::Deliver(Event::Granted { job, device: d }));
                return;
            }
        }
        self.waiting.push_back(job);
    }

    /// A withdrawn ask (`cancel`) or a finished batch leaves the book.
    fn forget(&mut self, job: JobId, run: Nanos, cancel: bool, out: &mut Vec<Effect>) {
        let Some((_, place)) = self.jobs.remove(&job) else {
            return;
        };
        match place {
            Place::Asked { conn } if cancel && self.is_live(conn) => {
                out.push(Effect::Send(Message::Cancel { id: job }));
            }
            Place::Held { conn } if self.is_live(conn) => {
                out.push(Effect::Send(Message::Release {
                    id: job,
                    run_ns: if cancel { 0 } else { run },
                }));
            }
            Place::Waiting => self.waiting.retain(|&j| j != job),
            Place::Local(d) => self.free(d, out),
            Place::Asked { .. } | Place::Held { .. } | Place::Orphan => {}
        }
    }

    fn is_live(&self, conn: u64) -> bool {
        self.conn.as_ref().is_some_and(|(c, _)| *c == conn)
    }

    /// A local device is free: the oldest waiter that may use it takes it.
    fn free(&mut self, d: DeviceId, out: &mut Vec<Effect>) {
        let next = self
            .waiting
            .iter()
            .position(|j| self.jobs[j].0.devices.contains(d));
        match next {
            Some(i) if self.conn.is_none() && self.fallback == Fallback::FailOpen => {
                let job = self.waiting.remove(i).expect("found");
                self.jobs.get_mut(&job).expect("waiting jobs are booked").1 = Place::Local(d);
                out.push(Effect::Deliver(Event::Granted { job, device: d }));
            }
            _ => self.busy[d] = false,
        }
    }

    /// The connection `conn` is up with the daemon's device names: waiting
    /// asks go to it in order.
    pub fn up(&mut self, now: Nanos, conn: u64, daemon: &[String], out: &mut Vec<Effect>) {
        let map: Vec<Option<u16>> = self
            .names
            .iter()
            .map(|n| daemon.iter().position(|d| d == n).map(|i| i as u16))
            .collect();
        let unknown: Vec<&str> = self
            .names
            .iter()
            .zip(&map)
            .filter(|(_, m)| m.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        let again = if self.told == Some(false) {
            "back"
        } else {
            "connected"
        };
        let mut m = format!("lanes arbiter at {}: {again}", self.path);
        if !unknown.is_empty() {
            m += &format!(
                "; it does not grant {} (its devices: {})",
                unknown.join(", "),
                daemon.join(", ")
            );
        }
        self.tell(true, m, out);
        self.conn = Some((conn, map));
        for job in std::mem::take(&mut self.waiting) {
            self.place(now, job, out);
        }
    }

    /// The connection is lost: its asks go round again, its grants are forgotten.
    pub fn down(&mut self, now: Nanos, out: &mut Vec<Effect>) {
        let Some((conn, _)) = self.conn.take() else {
            return;
        };
        let m = format!(
            "lanes arbiter at {}: connection lost; {}",
            self.path,
            self.meanwhile()
        );
        self.tell(false, m, out);
        let mut again: Vec<JobId> = Vec::new();
        for (&job, (_, place)) in &mut self.jobs {
            match *place {
                Place::Asked { conn: c } if c == conn => again.push(job),
                Place::Held { conn: c } if c == conn => *place = Place::Orphan,
                _ => {}
            }
        }
        again.sort_unstable(); // ids grow with asks: the oldest first
        for job in again {
            self.place(now, job, out);
        }
    }

    /// A message from the daemon.
    pub fn message(&mut self, now: Nanos, m: Message, out: &mut Vec<Effect>) {
        match m {
            Message::Grant { id, device, .. } => self.granted(id, device, out),
            Message::Reject {
                id,
                reason,
                message,
            } => {
                let Some((ask, Place::Asked { .. })) = self.jobs.get(&id) else {
                    return;
                };
                if reason == RejectReason::ShuttingDown && self.fallback == Fallback::FailOpen {
                    // The daemon is going away: run by ourselves meanwhile.
                    self.down(now, out);
                    return;
                }
                let refusal = match reason {
                    RejectReason::Deadline => Refusal::Deadline,
                    _ => Refusal::Refused(format!(
                        "the arbiter refused its batch of {} ({reason}): {message}",
                        ask.rows
                    )),
                };
                if let Refusal::Refused(m) = &refusal {
                    out.push(Effect::Deliver(Event::Notice(Notice {
                        warning: true,
                        message: format!("{}: {m}", ask.model),
                    })));
                }
                self.jobs.remove(&id);
                out.push(Effect::Deliver(Event::Refused { job: id, refusal }));
            }
            // RELEASED, STATS, REVOKED (the batch runs to its end), ERROR (the
            // daemon closes the connection next: `down`).
            _ => {}
        }
    }

    fn granted(&mut self, job: JobId, device: u16, out: &mut Vec<Effect>) {
        let Some((conn, map)) = &self.conn else {
            return;
        };
        let conn = *conn;
        let local = map.iter().position(|&m| m == Some(device));
        match (self.jobs.get_mut(&job), local) {
            (Some((_, place @ Place::Asked { .. })), Some(d)) => {
                *place = Place::Held { conn };
                out.push(Effect::Deliver(Event::Granted { job, device: d }));
            }
            (Some((_, Place::Asked { .. })), None) => {
                self.jobs.remove(&job);
                out.push(Effect::Send(Message::Release { id: job, run_ns: 0 }));
                out.push(refused(
                    job,
                    format!(
                        "the arbiter granted device {device}, which is not one of this server's"
                    ),
                ));
            }
            // Crossed a CANCEL (or a duplicate): give it back.
            _ => out.push(Effect::Send(Message::Release { id: job, run_ns: 0 })),
        }
    }

    /// `fail_closed`: asks whose deadline passed while the daemon was down are refused.
    pub fn expire(&mut self, now: Nanos, out: &mut Vec<Effect>) {
        if self.conn.is_some() || self.fallback == Fallback::FailOpen {
            return;
        }
        let jobs = &self.jobs;
        let (late, keep): (Vec<JobId>, Vec<JobId>) = self
            .waiting
            .iter()
            .partition(|j| jobs[j].0.deadline.is_some_and(|d| d <= now));
        self.waiting = keep.into();
        for job in late {
            self.jobs.remove(&job);
            out.push(refused(
                job,
                format!(
                    "the arbiter at {} is down and did not come back before the deadline \
                     (fail_closed)",
                    self.path
                ),
            ));
        }
    }

    /// When [`Book::expire`] has work next.
    pub fn next_wake(&self) -> Option<Nanos> {
        if self.conn.is_some() || self.fallback == Fallback::FailOpen {
            return None;
        }
        self.waiting
            .iter()
            .filter_map(|j| self.jobs[j].0.deadline)
            .min()
    }
}

fn refused(job: JobId, message: String) -> Effect {
    Effect::Deliver(Event::Refused {
        job,
        refusal: Refusal::Refused(message),
    })
}

/// The driver's end of the link: requests in, events out.
#[derive(Debug)]
pub struct Link {
    pub tx: mpsc::UnboundedSender<Request>,
    pub rx: mpsc::UnboundedReceiver<Event>,
}

impl Link {
    /// Starts the link's task on the current runtime; it ends when `tx` is dropped.
    pub fn start(config: ArbiterConfig, names: Vec<String>, clock: Clock) -> Self {
        let (tx, requests) = mpsc::unbounded_channel();
        let (events, rx) = mpsc::unbounded_channel();
        let book = Book::new(config.fallback, config.path.display().to_string(), names);
        tokio::spawn(run(config, book, clock, requests, events));
        Self { tx, rx }
    }
}

/// One connection: the write half here, frames read by their own task.
struct Conn {
    writer: OwnedWriteHalf,
    frames: mpsc::UnboundedReceiver<Message>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn run(
    config: ArbiterConfig,
    mut book: Book,
    clock: Clock,
    mut requests: mpsc::UnboundedReceiver<Request>,
    events: mpsc::UnboundedSender<Event>,
) {
    let (base, cap) = config.backoff;
    let mut pause = base;
    let mut retry_at = tokio::time::Instant::now();
    let mut conn: Option<Conn> = None;
    let mut serial = 0u64;
    let mut out = Vec::new();
    loop {
        if conn.is_none() && tokio::time::Instant::now() >= retry_at {
            serial += 1;
            match connect(&config).await {
                Ok((c, devices)) => {
                    pause = base;
                    conn = Some(c);
                    book.up(clock.now(), serial, &devices, &mut out);
                }
                Err(()) => {
                    book.unreachable(&mut out);
                    retry_at = tokio::time::Instant::now() + pause;
                    pause = (pause * 2).min(cap);
                }
            }
        }
        if !out.is_empty() && !carry_out(&mut out, &mut conn, &events).await {
            book.down(clock.now(), &mut out);
            retry_at = tokio::time::Instant::now() + pause;
            continue;
        }
        let wake = book.next_wake().map(|t| clock.instant(t));
        let down = conn.is_none();
        let frames = async {
            match conn.as_mut() {
                Some(c) => c.frames.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = requests.recv() => {
                let Some(r) = r else { break };
                book.request(clock.now(), r, &mut out);
                while let Ok(r) = requests.try_recv() {
                    book.request(clock.now(), r, &mut out);
                }
            }
            m = frames => match m {
                Some(m) => book.message(clock.now(), m, &mut out),
                None => {
                    conn = None;
                    book.down(clock.now(), &mut out);
                    retry_at = tokio::time::Instant::now() + pause;
                }
            },
            () = tokio::time::sleep_until(retry_at), if down => {}
            () = sleep_until(wake), if wake.is_some() => book.expire(clock.now(), &mut out),
        }
        if !book.connected() && conn.is_some() {
            conn = None; // the daemon said it is shutting down
            retry_at = tokio::time::Instant::now() + pause;
        }
    }
}

/// Carries out effects; false when a write failed (the connection is gone).
async fn carry_out(
    out: &mut Vec<Effect>,
    conn: &mut Option<Conn>,
    events: &mpsc::UnboundedSender<Event>,
) -> bool {
    let mut frames = Vec::new();
    for effect in out.drain(..) {
        match effect {
            Effect::Send(m) => encode_frame(&m, &mut frames),
            Effect::Deliver(e) => {
                let _ = events.send(e);
            }
        }
    }
    match conn.as_mut() {
        Some(c) if !frames.is_empty() => {
            if c.writer.write_all(&frames).await.is_err() {
                *conn = None;
                return false;
            }
            true
        }
        _ => true,
    }
}

/// Connects and says HELLO; the daemon's device names on WELCOME.
async fn connect(config: &ArbiterConfig) -> Result<(Conn, Vec<String>), ()> {
    let handshake = async {
        let stream = UnixStream::connect(&config.path).await.map_err(|_| ())?;
        let (mut read, mut writer) = stream.into_split();
        let mut hello = Vec::new();
        encode_frame(
            &Message::Hello {
                version: VERSION,
                pid: std::process::id(),
                service: config.service.clone(),
            },
            &mut hello,
        );
        writer.write_all(&hello).await.map_err(|_| ())?;
        match read_frame(&mut read).await {
            Some(Message::Welcome { devices, .. }) => Ok((read, writer, devices)),
            _ => Err(()),
        }
    };
    let (mut read, writer, devices) = tokio::time::timeout(HANDSHAKE, handshake)
        .await
        .map_err(|_| ())??;
    let (tx, frames) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        while let Some(m) = read_frame(&mut read).await {
            if tx.send(m).is_err() {
                break;
            }
        }
    });
    Ok((
        Conn {
            writer,
            frames,
            reader,
        },
        devices,
    ))
}

/// One frame, decoded; None at the end of the stream or on a bad frame.
async fn read_frame(read: &mut OwnedReadHalf) -> Option<Message> {
    let mut prefix = [0u8; 4];
    read.read_exact(&mut prefix).await.ok()?;
    let len = frame_len(prefix).ok()?;
    let mut body = vec![0u8; len];
    read.read_exact(&mut body).await.ok()?;
    decode(&body).ok()
}

#[cfg(test)]
#[path = "arbiter_tests.rs"]
mod tests;
