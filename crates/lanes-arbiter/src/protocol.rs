//! The arbiter wire protocol, version 1: messages and their pure codec.
//!
//! Transport is a Unix stream socket. Every message is one *frame*: a 4-byte
//! big-endian length `N` (`1 <= N <= 65536`), then `N` bytes of *body*. Byte 0
//! of the body is the message type, then the fields in order: integers
//! big-endian, `str` = `u16` byte length + that many bytes of UTF-8, a list =
//! `u16` count + the items. Trailing bytes after the last field, a short body
//! or bad UTF-8 are malformed. The full specification with byte layouts is
//! docs/arbiter-protocol.md.
//!
//! [`decode`] and [`encode`] work on one body (no length prefix);
//! [`frame_len`] checks a length prefix and [`encode_frame`] writes prefix and
//! body. The codec is pure and never panics on any input (fuzzed: fuzz/).

use std::fmt;

use thiserror::Error;

/// The protocol version this codec speaks.
pub const VERSION: u16 = 1;
/// Largest frame body, bytes.
pub const MAX_FRAME: usize = 65536;
/// Largest model or service name, bytes of UTF-8.
pub const MAX_NAME: usize = 255;

/// Message type bytes.
pub mod kind {
    pub const HELLO: u8 = 0x01;
    pub const ACQUIRE: u8 = 0x02;
    pub const RELEASE: u8 = 0x03;
    pub const CANCEL: u8 = 0x04;
    pub const STATS: u8 = 0x05;
    pub const WELCOME: u8 = 0x81;
    pub const GRANT: u8 = 0x82;
    pub const REJECT: u8 = 0x83;
    pub const RELEASED: u8 = 0x84;
    pub const STATS_REPLY: u8 = 0x85;
    pub const REVOKED: u8 = 0x86;
    pub const ERROR: u8 = 0x8F;
}

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant = $value,)+
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value for a wire code, if it is a known one.
            pub fn from_code(code: u16) -> Option<Self> {
                match code {
                    $($value => Some(Self::$variant),)+
                    _ => None,
                }
            }

            /// The wire code.
            pub fn code(self) -> u16 {
                self as u16
            }

            /// The stable name (metrics labels, logs, docs).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// Why an ACQUIRE was refused (REJECT's reason).
    RejectReason {
        /// The deadline passed while queued, or (`edf`) can no longer be met.
        Deadline = 1 => "deadline",
        /// The daemon's queue bound (`--queue-limit`) is reached.
        Overload = 2 => "overload",
        /// A listed device number is not one of the daemon's devices.
        NoSuchDevice = 3 => "no_such_device",
        /// Batch 0, a duplicate id, or a bad model name.
        BadRequest = 4 => "bad_request",
        /// Withdrawn by CANCEL.
        Cancelled = 5 => "cancelled",
        /// The daemon is stopping.
        ShuttingDown = 6 => "shutting_down",
    }
}

wire_enum! {
    /// Why the daemon closes a connection (ERROR's code).
    ErrorCode {
        /// A body that breaks the layout: short, trailing bytes, bad UTF-8.
        Malformed = 1 => "malformed",
        /// A frame length of 0 or over 65536.
        TooLarge = 2 => "too_large",
        /// A HELLO with a version the daemon does not speak.
        UnsupportedVersion = 3 => "unsupported_version",
        /// No HELLO first, or a second HELLO.
        OutOfOrder = 4 => "out_of_order",
        /// A message type byte the daemon does not know.
        UnknownType = 5 => "unknown_type",
    }
}

/// ACQUIRE's fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Acquire {
    /// Client-chosen, unique among the connection's outstanding acquires and grants.
    pub id: u64,
    pub model: String,
    pub batch: u32,
    /// Estimated device time; 0 = let the daemon estimate.
    pub cost_ns: u64,
    /// 0 = no deadline; else the deadline is the daemon's receipt time + this.
    pub timeout_ns: u64,
    /// Eligible device numbers; empty = any device.
    pub devices: Vec<u16>,
}

/// One protocol message (a frame body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// 0x01 client → daemon: the first message of a connection.
    Hello {
        version: u16,
        pid: u32,
        service: String,
    },
    /// 0x02 client → daemon: ask for a device slot.
    Acquire(Acquire),
    /// 0x03 client → daemon: give a granted slot back.
    Release { id: u64, run_ns: u64 },
    /// 0x04 client → daemon: withdraw a queued ACQUIRE.
    Cancel { id: u64 },
    /// 0x05 client → daemon: ask for STATS_REPLY.
    Stats,
    /// 0x81 daemon → client: answer to HELLO.
    Welcome {
        version: u16,
        session: u64,
        devices: Vec<String>,
    },
    /// 0x82 daemon → client: the ACQUIRE `id` holds a slot of `device`.
    Grant { id: u64, device: u16, wait_ns: u64 },
    /// 0x83 daemon → client: the ACQUIRE `id` will never be granted.
    Reject {
        id: u64,
        reason: RejectReason,
        message: String,
    },
    /// 0x84 daemon → client: answer to RELEASE.
    Released { id: u64 },
    /// 0x85 daemon → client: answer to STATS, UTF-8 JSON.
    StatsReply { json: String },
    /// 0x86 daemon → client: the grant `id` was taken back (held past `--max-hold`).
    Revoked { id: u64 },
    /// 0x8F daemon → client: the connection is closed after this.
    Error { code: ErrorCode, message: String },
}

impl Message {
    /// The type byte.
    pub fn kind(&self) -> u8 {
        match self {
            Self::Hello { .. } => kind::HELLO,
            Self::Acquire(_) => kind::ACQUIRE,
            Self::Release { .. } => kind::RELEASE,
            Self::Cancel { .. } => kind::CANCEL,
            Self::Stats => kind::STATS,
            Self::Welcome { .. } => kind::WELCOME,
            Self::Grant { .. } => kind::GRANT,
            Self::Reject { .. } => kind::REJECT,
            Self::Released { .. } => kind::RELEASED,
            Self::StatsReply { .. } => kind::STATS_REPLY,
            Self::Revoked { .. } => kind::REVOKED,
            Self::Error { .. } => kind::ERROR,
        }
    }
}

/// A frame or body the codec refuses. [`ProtocolError::code`] is the ERROR
/// code the daemon answers with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The body breaks the layout of its type.
    #[error("malformed {what}: {why}")]
    Malformed { what: &'static str, why: String },
    /// A frame length outside 1..=65536.
    #[error("frame length {len}: must be 1..={MAX_FRAME}")]
    TooLarge { len: u64 },
    /// An unknown type byte.
    #[error("unknown message type 0x{kind:02x}")]
    UnknownType { kind: u8 },
}

impl ProtocolError {
    /// The ERROR code for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Malformed { .. } => ErrorCode::Malformed,
            Self::TooLarge { .. } => ErrorCode::TooLarge,
            Self::UnknownType { .. } => ErrorCode::UnknownType,
        }
    }
}

/// The body length a 4-byte prefix announces, checked against 1..=65536.
pub fn frame_len(prefix: [u8; 4]) -> Result<usize, ProtocolError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(ProtocolError::TooLarge { len: len as u64 });
    }
    Ok(len)
}

/// A cursor over one body.
struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn short(&self, need: usize) -> ProtocolError {
        ProtocolError::Malformed {
            what: self.what,
            why: format!(
                "body ends early ({} bytes left, {need} needed)",
                self.buf.len()
            ),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        if self.buf.len() < n {
            return Err(self.short(n));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ProtocolError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u16(&mut self) -> Result<u16, ProtocolError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, ProtocolError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn utf8(&self, bytes: &[u8]) -> Result<String, ProtocolError> {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| ProtocolError::Malformed {
                what: self.what,
                why: format!("a string is not UTF-8 ({e})"),
            })
    }

    fn str(&mut self) -> Result<String, ProtocolError> {
        let n = self.u16()? as usize;
        let bytes = self.take(n)?;
        self.utf8(bytes)
    }

    fn end(&self) -> Result<(), ProtocolError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::Malformed {
                what: self.what,
                why: format!("{} trailing bytes", self.buf.len()),
            })
        }
    }
}

fn reason(code: u16) -> Result<RejectReason, ProtocolError> {
    RejectReason::from_code(code).ok_or_else(|| ProtocolError::Malformed {
        what: "REJECT",
        why: format!("unknown reason {code}"),
    })
}

fn error_code(code: u16) -> Result<ErrorCode, ProtocolError> {
    ErrorCode::from_code(code).ok_or_else(|| ProtocolError::Malformed {
        what: "ERROR",
        why: format!("unknown code {code}"),
    })
}

/// Decodes one frame body (without its length prefix).
pub fn decode(body: &[u8]) -> Result<Message, ProtocolError> {
    let Some((&k, rest)) = body.split_first() else {
        return Err(ProtocolError::Malformed {
            what: "frame",
            why: "empty body".into(),
        });
    };
    let what = match k {
        kind::HELLO => "HELLO",
        kind::ACQUIRE => "ACQUIRE",
        kind::RELEASE => "RELEASE",
        kind::CANCEL => "CANCEL",
        kind::STATS => "STATS",
        kind::WELCOME => "WELCOME",
        kind::GRANT => "GRANT",
        kind::REJECT => "REJECT",
        kind::RELEASED => "RELEASED",
        kind::STATS_REPLY => "STATS_REPLY",
        kind::REVOKED => "REVOKED",
        kind::ERROR => "ERROR",
        _ => return Err(ProtocolError::UnknownType { kind: k }),
    };
    let mut r = Reader { buf: rest, what };
    let m = match k {
        kind::HELLO => Message::Hello {
            version: r.u16()?,
            pid: r.u32()?,
            service: r.str()?,
        },
        kind::ACQUIRE => {
            let id = r.u64()?;
            let model = r.str()?;
            let batch = r.u32()?;
            let cost_ns = r.u64()?;
            let timeout_ns = r.u64()?;
            let n = r.u16()? as usize;
            let mut devices = Vec::with_capacity(n.min(r.buf.len() / 2));
            for _ in 0..n {
                devices.push(r.u16()?);
            }
            Message::Acquire(Acquire {
                id,
                model,
                batch,
                cost_ns,
                timeout_ns,
                devices,
            })
        }
        kind::RELEASE => Message::Release {
            id: r.u64()?,
            run_ns: r.u64()?,
        },
        kind::CANCEL => Message::Cancel { id: r.u64()? },
        kind::STATS => Message::Stats,
        kind::WELCOME => {
            let version = r.u16()?;
            let session = r.u64()?;
            let n = r.u16()? as usize;
            let mut devices = Vec::with_capacity(n.min(r.buf.len() / 2));
            for _ in 0..n {
                devices.push(r.str()?);
            }
            Message::Welcome {
                version,
                session,
                devices,
            }
        }
        kind::GRANT => Message::Grant {
            id: r.u64()?,
            device: r.u16()?,
            wait_ns: r.u64()?,
        },
        kind::REJECT => Message::Reject {
            id: r.u64()?,
            reason: reason(r.u16()?)?,
            message: r.str()?,
        },
        kind::RELEASED => Message::Released { id: r.u64()? },
        kind::STATS_REPLY => {
            let n = r.u32()? as usize;
            let bytes = r.take(n)?;
            Message::StatsReply {
                json: r.utf8(bytes)?,
            }
        }
        kind::REVOKED => Message::Revoked { id: r.u64()? },
        _ => Message::Error {
            code: error_code(r.u16()?)?,
            message: r.str()?,
        },
    };
    r.end()?;
    Ok(m)
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a
/// character boundary.
fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let s = clip(s, u16::MAX as usize);
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends the body of `m` to `out` (no length prefix). Strings longer than
/// a `u16` length can say are cut at a character boundary; so is a
/// STATS_REPLY that would not fit a frame (callers keep bodies under 65536).
pub fn encode(m: &Message, out: &mut Vec<u8>) {
    out.push(m.kind());
    match m {
        Message::Hello {
            version,
            pid,
            service,
        } => {
            out.extend_from_slice(&version.to_be_bytes());
            out.extend_from_slice(&pid.to_be_bytes());
            put_str(out, service);
        }
        Message::Acquire(a) => {
            out.extend_from_slice(&a.id.to_be_bytes());
            put_str(out, &a.model);
            out.extend_from_slice(&a.batch.to_be_bytes());
            out.extend_from_slice(&a.cost_ns.to_be_bytes());
            out.extend_from_slice(&a.timeout_ns.to_be_bytes());
            let n = a.devices.len().min(u16::MAX as usize);
            out.extend_from_slice(&(n as u16).to_be_bytes());
            for d in &a.devices[..n] {
                out.extend_from_slice(&d.to_be_bytes());
            }
        }
        Message::Release { id, run_ns } => {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&run_ns.to_be_bytes());
        }
        Message::Cancel { id } | Message::Released { id } | Message::Revoked { id } => {
            out.extend_from_slice(&id.to_be_bytes());
        }
        Message::Stats => {}
        Message::Welcome {
            version,
            session,
            devices,
        } => {
            out.extend_from_slice(&version.to_be_bytes());
            out.extend_from_slice(&session.to_be_bytes());
            let n = devices.len().min(u16::MAX as usize);
            out.extend_from_slice(&(n as u16).to_be_bytes());
            for d in &devices[..n] {
                put_str(out, d);
            }
        }
        Message::Grant {
            id,
            device,
            wait_ns,
        } => {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&device.to_be_bytes());
            out.extend_from_slice(&wait_ns.to_be_bytes());
        }
        Message::Reject {
            id,
            reason,
            message,
        } => {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&reason.code().to_be_bytes());
            put_str(out, message);
        }
        Message::StatsReply { json } => {
            let json = clip(json, MAX_FRAME - 5);
            out.extend_from_slice(&(json.len() as u32).to_be_bytes());
            out.extend_from_slice(json.as_bytes());
        }
        Message::Error { code, message } => {
            out.extend_from_slice(&code.code().to_be_bytes());
            put_str(out, message);
        }
    }
}

/// Appends one whole frame (length prefix and body) to `out`.
pub fn encode_frame(m: &Message, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    encode(m, out);
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;
