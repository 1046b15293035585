//! The classic BPF program the kernel runs on every IPv4 packet before it
//! reaches our packet socket, so only replies to our probes are queued.
//!
//! The packet socket is `SOCK_DGRAM`, so offsets start at the IPv4 header.
//! The program accepts (the first [`SNAP_LEN`] bytes of) a packet when all hold:
//! 1. it is not one we are sending (`pkttype != PACKET_OUTGOING`; on loopback
//!    every packet is seen leaving and arriving);
//! 2. it is TCP and not a fragment;
//! 3. its destination port is our probe port (reserved, so nobody else uses it);
//! 4. the top byte of its acknowledgment number is our tag (see [`crate::cookie`]);
//! 5. its flags, among SYN|ACK|RST, are SYN+ACK or RST+ACK.
//!
//! Everything else is dropped in the kernel and never costs a wake-up or a
//! byte of our receive buffer. User space still checks the full
//! acknowledgment number per target and round.

/// One classic BPF instruction, as `struct sock_filter` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode.
    pub code: u16,
    /// Jump offset when true.
    pub jt: u8,
    /// Jump offset when false.
    pub jf: u8,
    /// Operand.
    pub k: u32,
}

// Opcode parts (linux/bpf_common.h).
pub(crate) const LD: u16 = 0x00;
pub(crate) const LDX: u16 = 0x01;
pub(crate) const ALU: u16 = 0x04;
pub(crate) const JMP: u16 = 0x05;
pub(crate) const RET: u16 = 0x06;
pub(crate) const W: u16 = 0x00;
pub(crate) const H: u16 = 0x08;
pub(crate) const B: u16 = 0x10;
pub(crate) const ABS: u16 = 0x20;
pub(crate) const IND: u16 = 0x40;
pub(crate) const MSH: u16 = 0xa0;
pub(crate) const JEQ: u16 = 0x10;
pub(crate) const JSET: u16 = 0x40;
pub(crate) const AND: u16 = 0x50;
pub(crate) const RSH: u16 = 0x70;
pub(crate) const K: u16 = 0x00;

/// `SKF_AD_OFF + SKF_AD_PKTTYPE`: the ancillary load of the packet type.
pub(crate) const AD_PKTTYPE: u32 = (-0x1000i32 + 4) as u32;
/// `PACKET_OUTGOING`.
pub(crate) const PACKET_OUTGOING: u32 = 4;
/// Bytes of an accepted packet that are queued: IPv4 and TCP headers with options.
pub const SNAP_LEN: u32 = 120;

const fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// The reply filter for probes from `port` whose sequence numbers carry `tag`.
pub fn replies(port: u16, tag: u8) -> Vec<Insn> {
    // Jump offsets count the instructions skipped; ACCEPT is at 16, REJECT at 17.
    const ACCEPT: usize = 16;
    const REJECT: usize = 17;
    let to = |from: usize, target: usize| (target - from - 1) as u8;
    let program = vec![
        /* 0 */ stmt(LD | W | ABS, AD_PKTTYPE),
        /* 1 */ jump(JMP | JEQ | K, PACKET_OUTGOING, to(1, REJECT), 0),
        /* 2 */ stmt(LD | B | ABS, 9),
        /* 3 */ jump(JMP | JEQ | K, 6, 0, to(3, REJECT)),
        /* 4 */ stmt(LD | H | ABS, 6),
        /* 5 */ jump(JMP | JSET | K, 0x1fff, to(5, REJECT), 0),
        /* 6 */ stmt(LDX | B | MSH, 0),
        /* 7 */ stmt(LD | H | IND, 2),
        /* 8 */ jump(JMP | JEQ | K, u32::from(port), 0, to(8, REJECT)),
        /* 9 */ stmt(LD | W | IND, 8),
        /* 10 */ stmt(ALU | RSH | K, 24),
        /* 11 */ jump(JMP | JEQ | K, u32::from(tag), 0, to(11, REJECT)),
        /* 12 */ stmt(LD | B | IND, 13),
        /* 13 */ stmt(ALU | AND | K, 0x16),
        /* 14 */ jump(JMP | JEQ | K, 0x12, to(14, ACCEPT), 0),
        /* 15 */ jump(JMP | JEQ | K, 0x14, 0, to(15, REJECT)),
        /* 16 */ stmt(RET | K, SNAP_LEN),
        /* 17 */ stmt(RET | K, 0),
    ];
    debug_assert_eq!(program.len(), REJECT + 1);
    program
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::reply;
    use crate::packet::{ACK, FIN, RST, SYN};
    use std::net::SocketAddrV4;

    /// Runs the subset of classic BPF the programs above use, as the kernel
    /// would on `packet` of type `pkttype`; returns the bytes to accept.
    fn run(program: &[Insn], packet: &[u8], pkttype: u32) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let load = |off: u32, size: usize| -> Option<u32> {
            let off = off as usize;
            let bytes = packet.get(off..off + size)?;
            Some(bytes.iter().fold(0u32, |acc, b| acc << 8 | u32::from(*b)))
        };
        loop {
            let i = program[pc];
            pc += 1;
            let size = match i.code & 0x18 {
                W => 4,
                H => 2,
                _ => 1,
            };
            match i.code {
                c if c == LD | W | ABS && i.k == AD_PKTTYPE => a = pkttype,
                c if c & 0x07 == LD && c & 0xe0 == ABS => match load(i.k, size) {
                    Some(v) => a = v,
                    None => return 0,
                },
                c if c & 0x07 == LD && c & 0xe0 == IND => match load(x + i.k, size) {
                    Some(v) => a = v,
                    None => return 0,
                },
                c if c == LDX | B | MSH => match load(i.k, 1) {
                    Some(v) => x = (v & 0x0f) * 4,
                    None => return 0,
                },
                c if c == ALU | RSH | K => a >>= i.k,
                c if c == ALU | AND | K => a &= i.k,
                c if c == JMP | JEQ | K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                c if c == JMP | JSET | K => {
                    pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf })
                }
                c if c == RET | K => return i.k,
                other => panic!("opcode {other:#x} not in the test interpreter"),
            }
        }
    }

    #[test]
    fn passes_only_our_replies() {
        let port = 40000;
        let tag = 0xab;
        let program = replies(port, tag);
        let target: SocketAddrV4 = "127.0.0.5:8080".parse().unwrap();
        let us = SocketAddrV4::new([127, 0, 0, 1].into(), port);
        let ours = 0xab12_3457;
        let host = 0; // PACKET_HOST
        let cases = [
            (
                "SYN-ACK",
                reply(target, us, ours, SYN | ACK),
                host,
                SNAP_LEN,
            ),
            (
                "RST-ACK",
                reply(target, us, ours, RST | ACK),
                host,
                SNAP_LEN,
            ),
            (
                "outgoing copy",
                reply(target, us, ours, SYN | ACK),
                PACKET_OUTGOING,
                0,
            ),
            (
                "other port",
                reply(target, SocketAddrV4::new(*us.ip(), 40001), ours, SYN | ACK),
                host,
                0,
            ),
            (
                "other tag",
                reply(target, us, 0xac12_3457, SYN | ACK),
                host,
                0,
            ),
            ("bare RST", reply(target, us, ours, RST), host, 0),
            ("SYN", reply(target, us, ours, SYN), host, 0),
            ("ACK", reply(target, us, ours, ACK), host, 0),
            ("FIN-ACK", reply(target, us, ours, FIN | ACK), host, 0),
        ];
        for (what, packet, pkttype, want) in cases {
            assert_eq!(run(&program, &packet, pkttype), want, "{what}");
        }
        let mut udp = reply(target, us, ours, SYN | ACK);
        udp[9] = 17;
        assert_eq!(run(&program, &udp, host), 0, "UDP");
        let mut fragment = reply(target, us, ours, SYN | ACK);
        fragment[7] = 8;
        assert_eq!(run(&program, &fragment, host), 0, "fragment");
        // IP options move the TCP header: the program follows the IHL.
        let plain = reply(target, us, ours, SYN | ACK);
        let mut with_options = plain[..20].to_vec();
        with_options[0] = 0x46;
        with_options.extend_from_slice(&[1, 1, 1, 0]);
        with_options.extend_from_slice(&plain[20..]);
        assert_eq!(run(&program, &with_options, host), SNAP_LEN, "IP options");
        assert_eq!(run(&program, &plain[..30], host), 0, "truncated");
    }

    #[test]
    fn jumps_stay_inside_the_program() {
        let p = replies(1, 2);
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == JMP {
                assert!(
                    i + 1 + usize::from(insn.jt.max(insn.jf)) < p.len(),
                    "insn {i}"
                );
            }
        }
        assert_eq!(p.last().map(|i| i.code), Some(RET | K));
    }
}
