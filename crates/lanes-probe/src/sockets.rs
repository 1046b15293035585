//! The sockets of `syn` mode, as safe wrappers over socket2 and nix:
//! - [`RawSender`]: `AF_INET`/`SOCK_RAW`/`IPPROTO_RAW`, non-blocking: it sends
//!   whole IPv4 packets (`IP_HDRINCL` is implied) and, being send-only, is
//!   never handed a copy of incoming traffic (an `IPPROTO_TCP` raw socket gets
//!   a clone of every TCP segment the host receives);
//! - [`ReplySocket`]: `AF_PACKET`/`SOCK_DGRAM` for IPv4 on every interface,
//!   with the reply filter of [`crate::filter`] attached in the kernel, a
//!   receive buffer sized by [`ReplySocket::size_buffer`], and the kernel's
//!   `PACKET_STATISTICS`;
//! - [`PortReservation`]: a bound, never listening, TCP socket that keeps our
//!   probe port from being handed to anyone else (a SYN-ACK to it finds no
//!   socket, so the kernel answers RST and the probe stays half-open);
//! - [`Capabilities`]: `CAP_NET_RAW` and `CAP_NET_ADMIN` from `/proc/self/status`.
//!
//! `PACKET_STATISTICS` has no wrapper in nix or socket2, nor a constant in
//! libc: it is declared here with nix's `sockopt_impl!`, nix's documented way
//! to add an option. The getsockopt it generates checks the length the kernel
//! returns, and `tpacket_stats` is two `u32`s, valid for any bits. This crate
//! has no `unsafe` of its own.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use nix::libc;
use nix::sys::socket::{getsockopt, setsockopt, sockopt};
use nix::{getsockopt_impl, sockopt_impl};
use socket2::{Domain, Protocol, SockAddr, SockFilter, Socket, Type};

use crate::filter::{self, Insn};

/// `PACKET_STATISTICS` (linux/if_packet.h).
const PACKET_STATISTICS: libc::c_int = 6;
/// `ETH_P_IP`.
const ETH_P_IP: u16 = 0x0800;

/// `struct tpacket_stats` (linux/if_packet.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

sockopt_impl!(
    /// `PACKET_STATISTICS`: packets seen and dropped since the last read (reading resets both).
    PacketStatistics,
    GetOnly,
    libc::SOL_PACKET,
    PACKET_STATISTICS,
    TpacketStats
);

/// The kernel's counts for the reply socket since the previous read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Packets that passed the filter (queued or dropped).
    pub packets: u64,
    /// Of those, packets dropped because the receive buffer was full.
    pub drops: u64,
}

fn to_filter(program: &[Insn]) -> Vec<SockFilter> {
    program
        .iter()
        .map(|i| SockFilter::new(i.code, i.jt, i.jf, i.k))
        .collect()
}

/// True when an error means "not allowed" (no `CAP_NET_RAW`, or a policy forbids it).
pub fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES))
}

/// The raw socket SYNs leave from.
#[derive(Debug)]
pub struct RawSender {
    sock: Socket,
}

impl RawSender {
    /// Opens it; fails with `EPERM` without `CAP_NET_RAW`.
    pub fn open() -> io::Result<Self> {
        let sock = Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(libc::IPPROTO_RAW)),
        )?;
        sock.set_nonblocking(true)?;
        // Best effort: more room before sends would block (capped by net.core.wmem_max).
        let _ = sock.set_send_buffer_size(4 << 20);
        Ok(Self { sock })
    }

    /// Sends one packet (IPv4 header included) to `dst`.
    pub fn send(&self, packet: &[u8], dst: Ipv4Addr) -> io::Result<()> {
        let to = SockAddr::from(SocketAddrV4::new(dst, 0));
        self.sock.send_to(packet, &to).map(drop)
    }
}

impl AsRawFd for RawSender {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// How the receive buffer came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferReport {
    /// Bytes wanted.
    pub wanted: usize,
    /// Bytes the kernel reports (`SO_RCVBUF` as read back).
    pub effective: usize,
    /// Whether `SO_RCVBUFFORCE` set it (past `net.core.rmem_max`).
    pub forced: bool,
    /// `net.core.rmem_max`, when readable.
    pub rmem_max: Option<usize>,
}

impl BufferReport {
    /// True when the kernel gave less than wanted.
    pub fn capped(&self) -> bool {
        self.effective < self.wanted
    }
}

/// `net.core.rmem_max`, when readable.
pub fn rmem_max() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The packet socket replies are read from.
#[derive(Debug)]
pub struct ReplySocket {
    sock: Socket,
}

impl ReplySocket {
    /// Opens it with the reply filter for `port` and `tag`; fails with
    /// `EPERM` without `CAP_NET_RAW`. Packets queued before the filter was
    /// attached are discarded.
    pub fn open(port: u16, tag: u8) -> io::Result<Self> {
        let protocol = Protocol::from(i32::from(ETH_P_IP.to_be()));
        let sock = Socket::new(Domain::PACKET, Type::DGRAM, Some(protocol))?;
        sock.attach_filter(&to_filter(&filter::replies(port, tag)))?;
        sock.set_nonblocking(true)?;
        let this = Self { sock };
        let mut buf = [0u8; 256];
        while this.recv(&mut buf).is_ok() {}
        Ok(this)
    }

    /// Sizes the receive buffer to `wanted` bytes as the kernel counts them
    /// (it doubles what is set, for bookkeeping, so half is asked for).
    /// With `force` (`CAP_NET_ADMIN`), `SO_RCVBUFFORCE` goes past
    /// `net.core.rmem_max`; without it, or if that fails, `SO_RCVBUF` is
    /// capped at twice `rmem_max`.
    pub fn size_buffer(&self, wanted: usize, force: bool) -> io::Result<BufferReport> {
        let ask = wanted.div_ceil(2);
        let forced = force && setsockopt(&self.sock, sockopt::RcvBufForce, &ask).is_ok();
        if !forced {
            self.sock.set_recv_buffer_size(ask)?;
        }
        Ok(BufferReport {
            wanted,
            effective: self.sock.recv_buffer_size()?,
            forced,
            rmem_max: rmem_max(),
        })
    }

    /// Reads one packet (non-blocking: `WouldBlock` when none is queued).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.sock).read(buf)
    }

    /// The kernel's counts since the previous call (reading resets them).
    pub fn stats(&self) -> io::Result<KernelStats> {
        let s = getsockopt(&self.sock, PacketStatistics)?;
        Ok(KernelStats {
            packets: u64::from(s.tp_packets),
            drops: u64::from(s.tp_drops),
        })
    }
}

impl AsRawFd for ReplySocket {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl AsFd for ReplySocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

/// Our probe port, held by a bound TCP socket that never listens.
#[derive(Debug)]
pub struct PortReservation {
    _sock: Socket,
    port: u16,
}

impl PortReservation {
    /// Takes a free port on every IPv4 address.
    pub fn take() -> io::Result<Self> {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        sock.bind(&SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)))?;
        let port = sock
            .local_addr()?
            .as_socket()
            .map(|a| a.port())
            .ok_or_else(|| io::Error::other("bound TCP socket without an address"))?;
        Ok(Self { _sock: sock, port })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// The source address the kernel would use to reach `dst` (a connected UDP
/// socket's local address; nothing is sent).
pub fn source_for(dst: Ipv4Addr) -> io::Result<Ipv4Addr> {
    let udp = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    udp.connect((dst, 9))?;
    match udp.local_addr()? {
        SocketAddr::V4(a) => Ok(*a.ip()),
        SocketAddr::V6(_) => Err(io::Error::other("IPv4 socket with an IPv6 address")),
    }
}

/// The capabilities `syn` mode cares about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `CAP_NET_RAW`: raw and packet sockets.
    pub net_raw: bool,
    /// `CAP_NET_ADMIN`: `SO_RCVBUFFORCE`.
    pub net_admin: bool,
}

const CAP_NET_ADMIN: u32 = 12;
const CAP_NET_RAW: u32 = 13;

impl Capabilities {
    /// The effective set of this process (`CapEff` in `/proc/self/status`);
    /// none when it cannot be read.
    pub fn current() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        Self::from_status(&status)
    }

    /// Parses the `CapEff:` line of a `/proc/<pid>/status` text.
    pub fn from_status(status: &str) -> Self {
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .unwrap_or(0);
        Self {
            net_raw: eff >> CAP_NET_RAW & 1 == 1,
            net_admin: eff >> CAP_NET_ADMIN & 1 == 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_from_status() {
        let cases = [
            ("CapEff:\t000001fffeffffff\n", true, true),
            ("Name: x\nCapEff:\t0000000000002000\n", true, false),
            ("CapEff:\t0000000000001000\n", false, true),
            ("CapEff:\t0000000000000000\n", false, false),
            ("no such line\n", false, false),
        ];
        for (text, raw, admin) in cases {
            let c = Capabilities::from_status(text);
            assert_eq!((c.net_raw, c.net_admin), (raw, admin), "{text:?}");
        }
    }

    #[test]
    fn reservation_and_source() {
        let r = PortReservation::take().unwrap();
        assert_ne!(r.port(), 0);
        assert_eq!(
            source_for(Ipv4Addr::new(127, 0, 0, 9)).unwrap().octets()[0],
            127
        );
    }
}
