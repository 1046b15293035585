//! The bytes on the wire: the SYN we send (IPv4 header included: the raw
//! socket is `IPPROTO_RAW`) and the replies we read (an IPv4 packet from
//! the packet socket, link header already removed).
//!
//! The SYN is what a kernel would send, minus most options: IPv4 with DF set,
//! TTL 64, the ID left to the kernel; TCP with the SYN flag, a 64240-byte
//! window and one MSS option (1460), since some middleboxes drop SYNs without
//! options. Checksums are computed here (the kernel fills the IP one again).
//! Replies are parsed, not checked: a loopback packet's TCP checksum is left
//! to offload and never filled in, and the filter plus the acknowledgment
//! number already say it is ours.

use std::net::{Ipv4Addr, SocketAddrV4};

/// Length of our SYN: 20 bytes of IPv4 header and 24 of TCP (with the MSS option).
pub const SYN_LEN: usize = 44;
/// TCP flag bits.
pub const FIN: u8 = 0x01;
/// SYN flag.
pub const SYN: u8 = 0x02;
/// RST flag.
pub const RST: u8 = 0x04;
/// ACK flag.
pub const ACK: u8 = 0x10;

/// The Internet checksum's running sum of `bytes`.
fn sum(bytes: &[u8], mut acc: u32) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The TCP checksum of `segment` from `src` to `dst` (pseudo-header included).
pub fn tcp_checksum(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let mut acc = sum(&src.octets(), 0);
    acc = sum(&dst.octets(), acc);
    acc += 6 + segment.len() as u32;
    fold(sum(segment, acc))
}

/// The SYN from `src` to `dst` with sequence number `seq`.
pub fn syn(src: SocketAddrV4, dst: SocketAddrV4, seq: u32) -> [u8; SYN_LEN] {
    let mut p = [0u8; SYN_LEN];
    // IPv4: version 4, IHL 5; total length; ID 0 (kernel fills); DF; TTL 64; TCP.
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(SYN_LEN as u16).to_be_bytes());
    p[6] = 0x40;
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&src.ip().octets());
    p[16..20].copy_from_slice(&dst.ip().octets());
    let ip_sum = fold(sum(&p[..20], 0));
    p[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    // TCP: ports, seq, ack 0, data offset 6 words, SYN, window, checksum, urgent 0, MSS option.
    let t = &mut p[20..];
    t[0..2].copy_from_slice(&src.port().to_be_bytes());
    t[2..4].copy_from_slice(&dst.port().to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[12] = 6 << 4;
    t[13] = SYN;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    t[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
    let tcp_sum = tcp_checksum(*src.ip(), *dst.ip(), t);
    t[16..18].copy_from_slice(&tcp_sum.to_be_bytes());
    p
}

/// What a reply says about the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// SYN-ACK: the port accepts connections.
    SynAck,
    /// RST-ACK: the port is closed.
    Reset,
}

/// A reply to a probe, as read from the packet socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The target that answered (the packet's source).
    pub from: SocketAddrV4,
    /// Our port it was sent to.
    pub to_port: u16,
    /// Its acknowledgment number.
    pub ack: u32,
    /// SYN-ACK or RST.
    pub kind: ReplyKind,
}

/// Reads a reply from an IPv4 packet: `None` unless it is an unfragmented TCP
/// segment with ACK and either SYN or RST (not both, and no FIN).
pub fn parse_reply(p: &[u8]) -> Option<Reply> {
    if p.len() < 20 || p[0] >> 4 != 4 || p[9] != 6 {
        return None;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let fragment = u16::from_be_bytes([p[6], p[7]]) & 0x3fff;
    if ihl < 20 || fragment != 0 || p.len() < ihl + 20 {
        return None;
    }
    let t = &p[ihl..];
    let flags = t[13];
    let kind = match flags & (SYN | RST | ACK | FIN) {
        f if f == SYN | ACK => ReplyKind::SynAck,
        f if f == RST | ACK => ReplyKind::Reset,
        _ => return None,
    };
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    Some(Reply {
        from: SocketAddrV4::new(src, u16::from_be_bytes([t[0], t[1]])),
        to_port: u16::from_be_bytes([t[2], t[3]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        kind,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A reply as a peer would send it: from `from` to `to`, acknowledging `ack`.
    pub(crate) fn reply(from: SocketAddrV4, to: SocketAddrV4, ack: u32, flags: u8) -> Vec<u8> {
        let mut p = syn(from, to, 12345).to_vec();
        p[20 + 8..20 + 12].copy_from_slice(&ack.to_be_bytes());
        p[20 + 13] = flags;
        p
    }

    #[test]
    fn syn_is_well_formed() {
        let src: SocketAddrV4 = "10.1.2.3:40000".parse().unwrap();
        let dst: SocketAddrV4 = "10.9.8.7:8000".parse().unwrap();
        let p = syn(src, dst, 0xdead_beef);
        assert_eq!(fold(sum(&p[..20], 0)), 0, "IP checksum verifies");
        let segment = &p[20..];
        // A segment with its checksum in place sums to zero with the pseudo-header.
        assert_eq!(tcp_checksum(*src.ip(), *dst.ip(), segment), 0);
        assert_eq!(&p[20..22], &40000u16.to_be_bytes());
        assert_eq!(&p[22..24], &8000u16.to_be_bytes());
        assert_eq!(&p[24..28], &0xdead_beefu32.to_be_bytes());
        assert_eq!(p[33], SYN);
        assert_eq!(p[32] >> 4, 6, "data offset: 24 bytes");
        assert_eq!(parse_reply(&p), None, "a bare SYN is no reply");
    }

    #[test]
    fn checksum_matches_a_known_segment() {
        // RFC 1071's example words: 0001 f203 f4f5 f6f7 sum to 0xddf2, checksum 0x220d.
        assert_eq!(
            fold(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7], 0)),
            0x220d
        );
        // Odd lengths pad with a zero byte.
        assert_eq!(fold(sum(&[0x01], 0)), !0x0100);
    }

    #[test]
    fn replies_parse_by_flags() {
        let target: SocketAddrV4 = "127.0.0.5:8080".parse().unwrap();
        let us: SocketAddrV4 = "127.0.0.1:40000".parse().unwrap();
        let cases = [
            (SYN | ACK, Some(ReplyKind::SynAck)),
            (RST | ACK, Some(ReplyKind::Reset)),
            (RST, None),
            (SYN, None),
            (ACK, None),
            (SYN | ACK | RST, None),
            (SYN | ACK | FIN, None),
            (ACK | 0x08, None),
        ];
        for (flags, want) in cases {
            let got = parse_reply(&reply(target, us, 77, flags));
            assert_eq!(got.map(|r| r.kind), want, "flags {flags:#x}");
            if let Some(r) = got {
                assert_eq!((r.from, r.to_port, r.ack), (target, 40000, 77));
            }
        }
        let mut fragment = reply(target, us, 77, SYN | ACK);
        fragment[7] = 1;
        assert_eq!(parse_reply(&fragment), None);
        let mut udp = reply(target, us, 77, SYN | ACK);
        udp[9] = 17;
        assert_eq!(parse_reply(&udp), None);
        assert_eq!(parse_reply(&reply(target, us, 77, SYN | ACK)[..39]), None);
    }
}
