//! Initial sequence numbers that mark a reply as an answer to our probe.
//!
//! Rule: `isn = tag << 24 | (h mod 0xff_ffff)`, where `h` is a keyed hash
//! (std's SipHash-1-3 over the 128-bit secret, the round, our source address
//! and the target's address) and `tag` is a byte of the secret. Both replies
//! a SYN can get — SYN-ACK from a listener, RST-ACK from a closed port —
//! acknowledge `isn + 1`. The low 24 bits of `isn` are at most `0xff_fffe`,
//! so `isn + 1` keeps the tag in its top byte: the kernel packet filter checks
//! the tag (8 bits, cheap), user space checks the whole number for that target
//! and round (24 more bits), so stray packets and late replies from an
//! earlier round are not counted. The secret comes from the OS (std's
//! `RandomState`) when the prober starts, so numbers are unpredictable to
//! others and differ between runs.

use std::hash::{BuildHasher, DefaultHasher, Hash, Hasher, RandomState};
use std::net::SocketAddrV4;

/// The secret behind a run's sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cookies {
    secret: [u64; 2],
}

impl Cookies {
    /// A fresh random secret.
    pub fn random() -> Self {
        let state = RandomState::new();
        Self::with_secret([
            state.hash_one(0x6c61_6e65_u64),
            state.hash_one(0x7072_6f62_u64),
        ])
    }

    /// A given secret (tests).
    pub fn with_secret(secret: [u64; 2]) -> Self {
        Self { secret }
    }

    /// The tag byte every sequence number (and every acknowledgment of one) starts with.
    pub fn tag(&self) -> u8 {
        (self.secret[1] >> 56) as u8
    }

    /// The sequence number of the SYN to `target` from `source` in `round`.
    pub fn isn(&self, round: u64, source: SocketAddrV4, target: SocketAddrV4) -> u32 {
        let mut h = DefaultHasher::new();
        self.secret.hash(&mut h);
        round.hash(&mut h);
        source.hash(&mut h);
        target.hash(&mut h);
        let low = (h.finish() % 0xff_ffff) as u32;
        u32::from(self.tag()) << 24 | low
    }

    /// True when `ack` acknowledges our SYN of `round` from `source` to `target`.
    pub fn acknowledges(
        &self,
        ack: u32,
        round: u64,
        source: SocketAddrV4,
        target: SocketAddrV4,
    ) -> bool {
        ack == self.isn(round, source, target).wrapping_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_keep_the_tag_and_name_target_and_round() {
        let c = Cookies::with_secret([1, 0xab00_0000_0000_0000]);
        assert_eq!(c.tag(), 0xab);
        let src: SocketAddrV4 = "127.0.0.1:40000".parse().unwrap();
        let mut seen = std::collections::HashSet::new();
        for port in 1..2000u16 {
            let dst = SocketAddrV4::new([127, 0, 0, 2].into(), port);
            let isn = c.isn(7, src, dst);
            assert_eq!(isn >> 24, 0xab);
            assert_eq!(isn.wrapping_add(1) >> 24, 0xab);
            assert!(c.acknowledges(isn.wrapping_add(1), 7, src, dst));
            assert!(!c.acknowledges(isn, 7, src, dst));
            assert!(!c.acknowledges(isn.wrapping_add(1), 8, src, dst));
            seen.insert(isn);
        }
        assert!(seen.len() > 1990, "numbers spread: {}", seen.len());
        assert_ne!(Cookies::random(), Cookies::random());
    }
}
