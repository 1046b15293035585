//! `syn` mode: half-open probes from a raw socket, replies from a packet socket.
//!
//! A round, for the IPv4 targets of a [`SynPlan`]:
//! 1. Replies still queued from earlier rounds are read first (counted late).
//! 2. A SYN goes to every target, from our reserved port, with the sequence
//!    number of [`crate::cookie`] for that target and round. After every
//!    [`SEND_BATCH`] SYNs, every reply already queued is read, so the queue
//!    never holds more than about a batch while we send.
//! 3. Then the loop waits for the socket to be readable, and at each wake-up
//!    reads *every* queued packet until the socket would block — never one
//!    per wake-up — until every target has answered or the timeout (counted
//!    from the last SYN) has passed.
//! 4. A reply counts when it comes from a target of the plan to our port and
//!    acknowledges that target's sequence number of this round: SYN-ACK →
//!    accepted, RST → refused; a second reply from the same target is a
//!    duplicate, one acknowledging the previous round is late, anything else
//!    stray. The kernel answers each SYN-ACK with a RST of its own (no socket
//!    owns our port's connection), so no connection is ever completed.
//! 5. `PACKET_STATISTICS` is read (and so reset): packets that passed the
//!    filter and those dropped for want of buffer. A target that never
//!    answered is a timeout — unless the kernel dropped replies in this
//!    round, when its silence proves nothing and the outcome is unknown.
//!    A SYN that could not be sent is unknown too.
//!
//! The receive buffer is sized for the whole fleet, [`BYTES_PER_REPLY`] per
//! target (at least [`MIN_BUFFER`]), so a round's replies fit even if the
//! process is descheduled while they arrive. IPv6 targets, and IPv4 ones
//! without a route, are left to `connect` probes in the same round.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::time::Instant;

use crate::cookie::Cookies;
use crate::packet::{self, ReplyKind};
use crate::sockets::{
    is_permission, BufferReport, Capabilities, KernelStats, PortReservation, RawSender, ReplySocket,
};
use crate::state::Outcome;
use crate::targets::Target;

/// SYNs sent between two reads of the reply queue.
pub const SEND_BATCH: usize = 256;
/// Receive buffer per target, bytes as the kernel counts them: a queued
/// SYN-ACK or RST costs about 830 bytes (`truesize`, measured on Linux 6.18:
/// 79 replies fill 64 KiB), and 2.5 times that leaves room for late replies.
pub const BYTES_PER_REPLY: usize = 2048;
/// Smallest receive buffer sized for a fleet, bytes.
pub const MIN_BUFFER: usize = 1 << 20;
/// Largest receive buffer sized for a fleet, bytes.
pub const MAX_BUFFER: usize = 256 << 20;

/// The receive buffer a fleet of `targets` wants.
pub fn wanted_buffer(targets: usize) -> usize {
    targets
        .saturating_mul(BYTES_PER_REPLY)
        .clamp(MIN_BUFFER, MAX_BUFFER)
}

/// One target of a SYN round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynTarget {
    /// Its index in the fleet.
    pub index: usize,
    /// Where the SYN goes.
    pub dst: SocketAddrV4,
    /// The source address the kernel routes it from.
    pub src: Ipv4Addr,
}

/// The IPv4 targets of a fleet, with their sources and a reply index.
#[derive(Debug, Clone, Default)]
pub struct SynPlan {
    targets: Vec<SynTarget>,
    by_addr: HashMap<SocketAddrV4, usize>,
}

impl SynPlan {
    /// Splits a fleet: IPv4 targets with a route are probed with SYNs; the
    /// others (IPv6, or no route) are returned for `connect` probes.
    /// Blocking (a route lookup per distinct address): call it off the loop.
    pub fn build(targets: &[Target]) -> (SynPlan, Vec<(usize, SocketAddr)>) {
        let mut plan = SynPlan::default();
        let mut others = Vec::new();
        let mut sources: HashMap<Ipv4Addr, Option<Ipv4Addr>> = HashMap::new();
        for (index, t) in targets.iter().enumerate() {
            let SocketAddr::V4(dst) = t.addr else {
                others.push((index, t.addr));
                continue;
            };
            let src = *sources
                .entry(*dst.ip())
                .or_insert_with(|| crate::sockets::source_for(*dst.ip()).ok());
            match src {
                Some(src) => {
                    plan.by_addr.insert(dst, plan.targets.len());
                    plan.targets.push(SynTarget { index, dst, src });
                }
                None => others.push((index, t.addr)),
            }
        }
        (plan, others)
    }

    /// Targets probed with SYNs.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// True when no target is probed with SYNs.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// What one SYN round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynRound {
    /// SYNs sent.
    pub sent: u64,
    /// SYNs that could not be sent.
    pub send_errors: u64,
    /// The first send error, for the log.
    pub first_send_error: Option<String>,
    /// SYN-ACKs to this round's SYNs.
    pub synacks: u64,
    /// RSTs to this round's SYNs.
    pub resets: u64,
    /// Targets that never answered.
    pub silent: u64,
    /// Second replies from a target in the round.
    pub duplicates: u64,
    /// Replies to the previous round's SYNs.
    pub late: u64,
    /// Packets the filter passed that are no reply of ours.
    pub strays: u64,
    /// The kernel's counts for the reply socket.
    pub kernel: KernelStats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    NotSent,
    Awaiting,
    Answered(ReplyKind),
}

/// The bookkeeping of one round.
struct Tally<'a> {
    round: u64,
    port: u16,
    cookies: &'a Cookies,
    plan: &'a SynPlan,
    status: Vec<Status>,
    awaiting: usize,
    stats: SynRound,
}

impl Tally<'_> {
    fn packet(&mut self, bytes: &[u8]) {
        let Some(reply) = packet::parse_reply(bytes) else {
            self.stats.strays += 1;
            return;
        };
        let Some(&pos) = self.plan.by_addr.get(&reply.from) else {
            self.stats.strays += 1;
            return;
        };
        let t = self.plan.targets[pos];
        let src = SocketAddrV4::new(t.src, self.port);
        if reply.to_port != self.port {
            self.stats.strays += 1;
        } else if !self.cookies.acknowledges(reply.ack, self.round, src, t.dst) {
            let late = self.round > 0
                && self
                    .cookies
                    .acknowledges(reply.ack, self.round - 1, src, t.dst);
            if late {
                self.stats.late += 1;
            } else {
                self.stats.strays += 1;
            }
        } else if self.status[pos] == Status::Awaiting {
            self.status[pos] = Status::Answered(reply.kind);
            self.awaiting -= 1;
            match reply.kind {
                ReplyKind::SynAck => self.stats.synacks += 1,
                ReplyKind::Reset => self.stats.resets += 1,
            }
        } else {
            self.stats.duplicates += 1;
        }
    }
}

/// Registers a socket with the runtime's reactor.
///
/// tokio 1.54 deprecated the safe `AsyncFd::with_interest` in favour of the
/// `unsafe` `register_with_interest`, whose one condition is that
/// `as_raw_fd` returns the same open descriptor for as long as the `AsyncFd`
/// lives. [`RawSender`] and [`ReplySocket`] own their `socket2::Socket` and
/// never replace it, so the condition holds; the safe wrapper keeps this
/// crate free of `unsafe`, which the workspace forbids.
#[allow(deprecated)]
fn register<T: AsRawFd>(inner: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    AsyncFd::with_interest(inner, interest)
}

/// Why `syn` mode could not start.
#[derive(Debug)]
pub enum OpenError {
    /// No `CAP_NET_RAW` (or a policy forbids raw sockets): fall back to `connect`.
    NoPrivilege(String),
    /// Anything else.
    Failed(String),
}

/// Options of [`SynProber::open`].
#[derive(Debug, Clone, Copy)]
pub struct SynOptions {
    /// Receive buffer asked for, bytes (`None`: [`wanted_buffer`] of the fleet).
    pub recv_buffer: Option<usize>,
    /// Behave as if `CAP_NET_RAW` were missing.
    pub simulate_no_raw: bool,
}

/// The sockets and secret of `syn` mode.
#[derive(Debug)]
pub struct SynProber {
    sender: AsyncFd<RawSender>,
    replies: AsyncFd<ReplySocket>,
    reservation: PortReservation,
    cookies: Cookies,
    options: SynOptions,
    force: bool,
    buffer: BufferReport,
}

impl SynProber {
    /// Opens the sockets for a fleet of `targets` (inside a tokio runtime).
    pub fn open(options: SynOptions, targets: usize) -> Result<Self, OpenError> {
        let caps = Capabilities::current();
        if options.simulate_no_raw {
            return Err(OpenError::NoPrivilege(
                "CAP_NET_RAW is missing (simulated by the configuration)".into(),
            ));
        }
        if !caps.net_raw {
            return Err(OpenError::NoPrivilege(
                "this process lacks CAP_NET_RAW".into(),
            ));
        }
        let failed = |what: &str, e: io::Error| {
            if is_permission(&e) {
                OpenError::NoPrivilege(format!("{what}: {e}"))
            } else {
                OpenError::Failed(format!("{what}: {e}"))
            }
        };
        let sender = RawSender::open().map_err(|e| failed("raw socket", e))?;
        let reservation = PortReservation::take().map_err(|e| failed("probe port", e))?;
        let cookies = Cookies::random();
        let replies = ReplySocket::open(reservation.port(), cookies.tag())
            .map_err(|e| failed("packet socket", e))?;
        let wanted = options.recv_buffer.unwrap_or(wanted_buffer(targets));
        let buffer = replies
            .size_buffer(wanted, caps.net_admin)
            .map_err(|e| failed("receive buffer", e))?;
        let sender = register(sender, Interest::WRITABLE).map_err(|e| failed("event loop", e))?;
        let replies = register(replies, Interest::READABLE).map_err(|e| failed("event loop", e))?;
        Ok(Self {
            sender,
            replies,
            reservation,
            cookies,
            options,
            force: caps.net_admin,
            buffer,
        })
    }

    /// Our probe port.
    pub fn port(&self) -> u16 {
        self.reservation.port()
    }

    /// The receive buffer as it came out.
    pub fn buffer(&self) -> BufferReport {
        self.buffer
    }

    /// Resizes the receive buffer for a fleet of `targets` (after a reload);
    /// `None` when the size was fixed by the configuration or is unchanged.
    pub fn fit(&mut self, targets: usize) -> io::Result<Option<BufferReport>> {
        let wanted = wanted_buffer(targets);
        if self.options.recv_buffer.is_some() || wanted == self.buffer.wanted {
            return Ok(None);
        }
        self.buffer = self.replies.get_ref().size_buffer(wanted, self.force)?;
        Ok(Some(self.buffer))
    }

    async fn send(&self, packet: &[u8], dst: Ipv4Addr) -> io::Result<()> {
        loop {
            let mut guard = self.sender.writable().await?;
            if let Ok(result) = guard.try_io(|s| s.get_ref().send(packet, dst)) {
                return result;
            }
        }
    }

    /// Reads every queued packet, without waiting.
    fn drain(&self, tally: &mut Tally<'_>, buf: &mut [u8]) -> io::Result<()> {
        loop {
            match self.replies.get_ref().recv(buf) {
                Ok(len) => tally.packet(&buf[..len]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Probes the plan's targets once (module docs), writing each outcome at
    /// the target's fleet index.
    pub async fn round(
        &mut self,
        round: u64,
        plan: &SynPlan,
        timeout: Duration,
        outcomes: &mut [Outcome],
    ) -> io::Result<SynRound> {
        let cookies = self.cookies;
        let port = self.port();
        let mut tally = Tally {
            round,
            port,
            cookies: &cookies,
            plan,
            status: vec![Status::NotSent; plan.len()],
            awaiting: 0,
            stats: SynRound::default(),
        };
        let mut buf = [0u8; 256];
        self.drain(&mut tally, &mut buf)?;
        for (pos, t) in plan.targets.iter().enumerate() {
            let src = SocketAddrV4::new(t.src, port);
            let syn = packet::syn(src, t.dst, cookies.isn(round, src, t.dst));
            match self.send(&syn, *t.dst.ip()).await {
                Ok(()) => {
                    tally.status[pos] = Status::Awaiting;
                    tally.awaiting += 1;
                    tally.stats.sent += 1;
                }
                Err(e) => {
                    tally.stats.send_errors += 1;
                    tally.stats.first_send_error.get_or_insert(e.to_string());
                }
            }
            if (pos + 1) % SEND_BATCH == 0 {
                self.drain(&mut tally, &mut buf)?;
            }
        }
        let deadline = Instant::now() + timeout;
        while tally.awaiting > 0 {
            let mut guard = tokio::select! {
                ready = self.replies.readable() => ready?,
                () = tokio::time::sleep_until(deadline) => break,
            };
            // Every queued packet per wake-up, until the socket would block.
            while let Ok(read) = guard.try_io(|s| s.get_ref().recv(&mut buf)) {
                match read {
                    Ok(len) => tally.packet(&buf[..len]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.drain(&mut tally, &mut buf)?;
        tally.stats.kernel = self.replies.get_ref().stats()?;
        let lost = tally.stats.kernel.drops > 0;
        for (pos, t) in plan.targets.iter().enumerate() {
            outcomes[t.index] = match tally.status[pos] {
                Status::NotSent => Outcome::Unknown,
                Status::Awaiting if lost => Outcome::Unknown,
                Status::Awaiting => Outcome::Timeout,
                Status::Answered(ReplyKind::SynAck) => Outcome::Accepted,
                Status::Answered(ReplyKind::Reset) => Outcome::Refused,
            };
        }
        tally.stats.silent = tally.awaiting as u64;
        Ok(tally.stats)
    }
}
