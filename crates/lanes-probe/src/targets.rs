//! The targets file: one `host:port [name]` per line, parsed into checked
//! [`Target`]s, and a [`Watch`] that tells when the file changed.
//!
//! The format, as the parser applies it:
//! - A `#` at the start of a line or after white space starts a comment that
//!   runs to the end of the line; lines left blank are skipped.
//! - The first word is the address, `IPv4:port`, `[IPv6]:port` or
//!   `hostname:port` with a port in 1–65535; the rest of the line, trimmed, is
//!   the optional name (spaces allowed, at most [`MAX_NAME`] characters, no
//!   control characters).
//! - A target is known by its address as written (`key`: IP literals in
//!   canonical form, host names in lower case). Listing one twice, or two that
//!   resolve to the same socket address, is an error: replies are matched to
//!   targets by address.
//! - Host names are resolved when the file is loaded (the first IPv4 address,
//!   else the first IPv6 one) and not again until the next reload.
//! - A file with no target, or more than [`MAX_TARGETS`], is an error.
//!
//! Every error names the file and the line.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::ProbeError;

/// Most targets one file may list.
pub const MAX_TARGETS: usize = 100_000;
/// Longest name, in characters.
pub const MAX_NAME: usize = 200;

/// The host part of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// An IP literal.
    Ip(IpAddr),
    /// A host name, resolved at load time.
    Name(String),
}

/// One parsed line, before host names are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number.
    pub line: usize,
    /// The host.
    pub host: Host,
    /// The port.
    pub port: u16,
    /// The name, if the line gives one.
    pub name: Option<String>,
}

impl Entry {
    /// The target as written, canonical: `127.0.0.1:80`, `[::1]:80`, `gpu7:8000`.
    pub fn key(&self) -> String {
        match &self.host {
            Host::Ip(ip) => SocketAddr::new(*ip, self.port).to_string(),
            Host::Name(name) => format!("{name}:{}", self.port),
        }
    }
}

/// A target to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The target as written (see [`Entry::key`]); events name it.
    pub key: String,
    /// The name from the file.
    pub name: Option<String>,
    /// Where probes go.
    pub addr: SocketAddr,
}

fn strip_comment(line: &str) -> &str {
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        if c == '#' && prev_space {
            return &line[..i];
        }
        prev_space = c.is_whitespace();
    }
    line
}

fn parse_address(word: &str) -> Result<(Host, u16), String> {
    let expected =
        || format!("{word:?} is not host:port (e.g. 10.0.0.7:8000, [::1]:80, gpu7:8000)");
    let (host, port) = word.rsplit_once(':').ok_or_else(expected)?;
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => return Err(format!("{port:?} in {word:?} is not a port in 1-65535")),
    };
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(expected)?;
        let ip: std::net::Ipv6Addr = inner
            .parse()
            .map_err(|_| format!("{inner:?} is not an IPv6 address"))?;
        return Ok((Host::Ip(IpAddr::V6(ip)), port));
    }
    if host.contains(':') {
        return Err(format!(
            "{word:?}: write IPv6 addresses in brackets, e.g. [::1]:80"
        ));
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok((Host::Ip(IpAddr::V4(ip)), port));
    }
    let valid = !host.is_empty()
        && host.len() <= 253
        && !host.starts_with(['-', '.'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
    if !valid || host.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("{host:?} is not an IPv4 address or a host name"));
    }
    Ok((Host::Name(host.to_ascii_lowercase()), port))
}

/// Parses the text of a targets file; `origin` (the file's name) prefixes errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Entry>, ProbeError> {
    let mut entries = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |why: String| ProbeError::Targets(format!("{origin} line {line}: {why}"));
        let content = strip_comment(raw).trim();
        if content.is_empty() {
            continue;
        }
        let (word, rest) = content
            .split_once(char::is_whitespace)
            .unwrap_or((content, ""));
        let (host, port) = parse_address(word).map_err(err)?;
        let name = rest.trim();
        if name.chars().count() > MAX_NAME {
            return Err(err(format!(
                "the name is longer than {MAX_NAME} characters"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(err("the name has a control character".into()));
        }
        let entry = Entry {
            line,
            host,
            port,
            name: (!name.is_empty()).then(|| name.to_string()),
        };
        if let Some(first) = seen.insert(entry.key(), line) {
            return Err(err(format!(
                "{} is already listed on line {first}",
                entry.key()
            )));
        }
        if entries.len() == MAX_TARGETS {
            return Err(err(format!("more than {MAX_TARGETS} targets")));
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(ProbeError::Targets(format!(
            "{origin}: no targets (expected lines of host:port [name])"
        )));
    }
    Ok(entries)
}

/// Resolves host names (blocking: call it off the probing loop) and checks
/// that no two targets share an address.
pub fn resolve(entries: Vec<Entry>, origin: &str) -> Result<Vec<Target>, ProbeError> {
    let mut by_addr: HashMap<SocketAddr, usize> = HashMap::with_capacity(entries.len());
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let err = |why: String| ProbeError::Targets(format!("{origin} line {}: {why}", entry.line));
        let addr = match &entry.host {
            Host::Ip(ip) => SocketAddr::new(*ip, entry.port),
            Host::Name(name) => {
                let all: Vec<SocketAddr> = (name.as_str(), entry.port)
                    .to_socket_addrs()
                    .map_err(|e| err(format!("cannot resolve {name:?}: {e}")))?
                    .collect();
                all.iter()
                    .find(|a| a.is_ipv4())
                    .or(all.first())
                    .copied()
                    .ok_or_else(|| err(format!("{name:?} has no address")))?
            }
        };
        if let Some(first) = by_addr.insert(addr, entry.line) {
            return Err(err(format!(
                "{} is {addr}, the same address as line {first}",
                entry.key()
            )));
        }
        out.push(Target {
            key: entry.key(),
            name: entry.name,
            addr,
        });
    }
    Ok(out)
}

/// Reads, parses and resolves a targets file (blocking).
pub fn load(path: &Path) -> Result<Vec<Target>, ProbeError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ProbeError::Io(format!("targets file {origin}: {e}")))?;
    resolve(parse(&text, &origin)?, &origin)
}

/// What identifies one version of a file: modification time, length, inode.
type Stamp = (Option<SystemTime>, u64, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len(), meta.ino()))
}

/// Tells when a file changed: its modification time, length or inode (a file
/// replaced by rename) differs from when [`Watch::mark`] was last called.
#[derive(Debug, Clone)]
pub struct Watch {
    path: PathBuf,
    seen: Option<Stamp>,
}

impl Watch {
    /// Watches `path`, taking its current version as seen.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            seen: stamp(path),
        }
    }

    /// The watched file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when the file differs from the version last marked (a missing file is no change).
    pub fn changed(&self) -> bool {
        match stamp(&self.path) {
            Some(now) => Some(now) != self.seen,
            None => false,
        }
    }

    /// Takes the file's current version as seen.
    pub fn mark(&mut self) {
        self.seen = stamp(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<(String, Option<String>, usize)> {
        parse(text, "t")
            .unwrap()
            .into_iter()
            .map(|e| (e.key(), e.name.clone(), e.line))
            .collect()
    }

    fn bad(text: &str) -> String {
        parse(text, "t").unwrap_err().to_string()
    }

    #[test]
    fn lines_comments_and_names() {
        let text = "# fleet\n\n127.0.0.1:80\n  10.0.0.7:8000   gpu a  # the big one\n\
                    [::1]:443 v6\nGPU7.example:9000\tseven\n";
        let got = ok(text);
        let want = [
            ("127.0.0.1:80", None, 3),
            ("10.0.0.7:8000", Some("gpu a"), 4),
            ("[::1]:443", Some("v6"), 5),
            ("gpu7.example:9000", Some("seven"), 6),
        ];
        assert_eq!(got.len(), 4, "{got:?}");
        for ((key, name, line), (wk, wn, wl)) in got.iter().zip(want) {
            assert_eq!((key.as_str(), name.as_deref(), *line), (wk, wn, wl));
        }
    }

    #[test]
    fn bad_lines_are_named_by_number() {
        let cases = [
            (
                "127.0.0.1:80\nnope\n",
                "t line 2: \"nope\" is not host:port",
            ),
            (
                "\n\n127.0.0.1:0\n",
                "t line 3: \"0\" in \"127.0.0.1:0\" is not a port",
            ),
            (
                "127.0.0.1:70000\n",
                "t line 1: \"70000\" in \"127.0.0.1:70000\" is not a port",
            ),
            (
                "::1:80\n",
                "t line 1: \"::1:80\": write IPv6 addresses in brackets",
            ),
            ("[::g]:80\n", "t line 1: \"::g\" is not an IPv6 address"),
            (
                "300.1.1.1:80\n",
                "t line 1: \"300.1.1.1\" is not an IPv4 address",
            ),
            ("a b:80\n", "t line 1: \"a\" is not host:port"),
            (
                "-x:80\n",
                "t line 1: \"-x\" is not an IPv4 address or a host name",
            ),
            (
                "1.2.3.4:80\n# c\n1.2.3.4:80 again\n",
                "t line 3: 1.2.3.4:80 is already listed on line 1",
            ),
            (
                "1.2.3.4:80 a\u{7}b\n",
                "t line 1: the name has a control character",
            ),
            ("# only comments\n\n", "t: no targets"),
            // A `#` not after white space is part of the word.
            (
                "10.0.0.8:1#x\n",
                "t line 1: \"1#x\" in \"10.0.0.8:1#x\" is not a port",
            ),
        ];
        for (text, want) in cases {
            let got = bad(text);
            assert!(
                got.starts_with(want),
                "{text:?}: got {got:?}, want {want:?}"
            );
        }
        let long = format!("1.2.3.4:80 {}\n", "n".repeat(MAX_NAME + 1));
        assert!(bad(&long).starts_with("t line 1: the name is longer"));
    }

    #[test]
    fn resolve_checks_shared_addresses() {
        let entries = parse("127.0.0.1:80\nlocalhost:80\n", "t").unwrap();
        let got = resolve(entries, "t");
        // localhost resolves to 127.0.0.1 first (IPv4 preferred) wherever /etc/hosts is sane.
        match got {
            Err(e) => assert!(e
                .to_string()
                .starts_with("t line 2: localhost:80 is 127.0.0.1:80")),
            Ok(t) => assert_ne!(t[1].addr, t[0].addr),
        }
        let targets = resolve(parse("127.0.0.2:81 x\n", "t").unwrap(), "t").unwrap();
        assert_eq!(
            targets,
            [Target {
                key: "127.0.0.2:81".into(),
                name: Some("x".into()),
                addr: "127.0.0.2:81".parse().unwrap()
            }]
        );
    }

    #[test]
    fn watch_sees_rewrites_and_renames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets");
        std::fs::write(&path, "127.0.0.1:80\n").unwrap();
        let mut watch = Watch::new(&path);
        assert!(!watch.changed());
        std::fs::write(&path, "127.0.0.1:80\n127.0.0.1:81\n").unwrap();
        assert!(watch.changed());
        watch.mark();
        assert!(!watch.changed());
        let tmp = dir.path().join("new");
        std::fs::write(&tmp, "127.0.0.1:82\n127.0.0.1:83\n").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(watch.changed());
        watch.mark();
        std::fs::remove_file(&path).unwrap();
        assert!(!watch.changed(), "a missing file is no change");
    }
}
