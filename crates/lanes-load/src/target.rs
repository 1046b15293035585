//! Where the load goes: a target parsed from its URL.
//!
//! | form                         | transport                     | protocol                  |
//! |------------------------------|-------------------------------|---------------------------|
//! | `http://host:port/path?q`    | TCP                           | HTTP/1.1 keep-alive       |
//! | `unix:/run/x.sock`           | Unix stream socket            | HTTP/1.1, path `/`        |
//! | `unix:/run/x.sock:/v2/path`  | Unix stream socket            | HTTP/1.1, path `/v2/path` |
//! | `frame+unix:/run/x.sock`     | Unix stream socket            | length-prefixed frames    |
//! | `grpc://host:port[/pkg.Svc/Method]` | TCP                    | gRPC (HTTP/2), unary      |
//!
//! A `grpc://` target calls one unary method, by default KServe v2's
//! [`KSERVE_MODEL_INFER`]; each request body is the method's protobuf message.
//!
//! A frame is a 4-byte big-endian payload length followed by the payload; the
//! reply is one frame (the arbiter protocol's framing). Host names resolve once,
//! before the run. TLS is not supported: lanes measures loopback serving paths.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use http::uri::{PathAndQuery, Scheme, Uri};

use crate::error::LoadError;

/// A parsed load target.
#[derive(Debug, Clone)]
pub struct Target {
    /// How to reach the server.
    pub endpoint: Endpoint,
    /// Wire protocol spoken on each connection.
    pub protocol: Protocol,
    /// Default request path (and query) for entries that give none.
    pub path: PathAndQuery,
    /// Value of the `Host` header.
    pub host: String,
    /// The URL as given, for reports.
    pub url: String,
}

/// The transport address.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A TCP address (the first the host name resolved to).
    Tcp(SocketAddr),
    /// A Unix stream socket path.
    Unix(PathBuf),
}

/// The protocol spoken on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 with keep-alive.
    Http1,
    /// Length-prefixed frames: `u32` big-endian length, then the payload.
    Frame,
    /// gRPC unary calls over HTTP/2 (prior knowledge, no TLS).
    Grpc,
}

/// The method a `grpc://` target without a path calls.
pub const KSERVE_MODEL_INFER: &str = "/inference.GRPCInferenceService/ModelInfer";

impl Target {
    /// Parses `url` (see the module table) and resolves its host.
    pub fn parse(url: &str) -> Result<Self, LoadError> {
        let bad = |why: &str| LoadError::BadUrl(format!("bad URL {url:?}: {why}"));
        if let Some(rest) = url.strip_prefix("frame+unix:") {
            if rest.is_empty() {
                return Err(bad("frame+unix: needs a socket path"));
            }
            return Ok(Self {
                endpoint: Endpoint::Unix(PathBuf::from(rest)),
                protocol: Protocol::Frame,
                path: PathAndQuery::from_static("/"),
                host: "localhost".into(),
                url: url.into(),
            });
        }
        if let Some(rest) = url.strip_prefix("unix:") {
            let (socket, path) = match rest.find(":/") {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, "/"),
            };
            if socket.is_empty() {
                return Err(bad("unix: needs a socket path, e.g. unix:/run/lanes.sock"));
            }
            let path = path
                .parse::<PathAndQuery>()
                .map_err(|e| bad(&format!("HTTP path {path:?}: {e}")))?;
            return Ok(Self {
                endpoint: Endpoint::Unix(PathBuf::from(socket)),
                protocol: Protocol::Http1,
                path,
                host: "localhost".into(),
                url: url.into(),
            });
        }
        let uri: Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
        let protocol = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => Protocol::Http1,
            Some(s) if s.as_str() == "grpc" => Protocol::Grpc,
            Some(s) if *s == Scheme::HTTPS => {
                return Err(bad(
                    "https is not supported (lanes bench measures plain HTTP/1.1 on loopback)",
                ))
            }
            Some(s) => {
                return Err(bad(&format!(
                    "unsupported scheme {s:?}; use http://, grpc://, unix: or frame+unix:"
                )))
            }
            None => {
                return Err(bad(
                    "no scheme; use http://host:port/path, grpc://host:port, unix:PATH or \
                     frame+unix:PATH",
                ))
            }
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let port = match (authority.port_u16(), protocol) {
            (Some(port), _) => port,
            (None, Protocol::Grpc) => return Err(bad("a grpc:// target needs a port")),
            (None, _) => 80,
        };
        let host = authority.host();
        let host_for_lookup = host.trim_start_matches('[').trim_end_matches(']');
        let addr = (host_for_lookup, port)
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve host {host:?}: {e}")))?
            .next()
            .ok_or_else(|| bad(&format!("host {host:?} has no address")))?;
        let mut path = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        if protocol == Protocol::Grpc {
            path = grpc_method(&path).map_err(|why| bad(&why))?;
        }
        Ok(Self {
            endpoint: Endpoint::Tcp(addr),
            protocol,
            path,
            host: authority.as_str().to_string(),
            url: url.into(),
        })
    }
}

/// A gRPC target's method path: `/` is [`KSERVE_MODEL_INFER`]; anything else
/// must be `/package.Service/Method` with no query.
fn grpc_method(path: &PathAndQuery) -> Result<PathAndQuery, String> {
    if path.as_str() == "/" {
        return Ok(PathAndQuery::from_static(KSERVE_MODEL_INFER));
    }
    let parts: Vec<&str> = path.path().split('/').collect();
    match parts.as_slice() {
        ["", service, method]
            if !service.is_empty() && !method.is_empty() && path.query().is_none() =>
        {
            Ok(path.clone())
        }
        _ => Err(format!(
            "gRPC method {:?}: expected /package.Service/Method (or none: {KSERVE_MODEL_INFER})",
            path.as_str()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_urls_resolve_and_keep_path_and_host() {
        let t = Target::parse("http://127.0.0.1:8080/v2/health/ready?x=1").unwrap();
        assert!(matches!(t.endpoint, Endpoint::Tcp(a) if a.port() == 8080));
        assert_eq!(t.path.as_str(), "/v2/health/ready?x=1");
        assert_eq!(t.host, "127.0.0.1:8080");
        let t = Target::parse("http://localhost").unwrap();
        assert!(matches!(t.endpoint, Endpoint::Tcp(a) if a.port() == 80));
        assert_eq!(t.path.as_str(), "/");
    }

    #[test]
    fn unix_urls_split_socket_and_path() {
        let t = Target::parse("unix:/tmp/a.sock:/v2/models/m/infer").unwrap();
        assert!(matches!(&t.endpoint, Endpoint::Unix(p) if p.to_str() == Some("/tmp/a.sock")));
        assert_eq!(t.path.as_str(), "/v2/models/m/infer");
        assert_eq!(t.protocol, Protocol::Http1);
        let t = Target::parse("unix:/tmp/a.sock").unwrap();
        assert_eq!(t.path.as_str(), "/");
        let t = Target::parse("frame+unix:/tmp/arb.sock").unwrap();
        assert_eq!(t.protocol, Protocol::Frame);
    }

    #[test]
    fn grpc_urls_call_model_infer_unless_a_method_is_given() {
        let t = Target::parse("grpc://127.0.0.1:8001").unwrap();
        assert_eq!(t.protocol, Protocol::Grpc);
        assert_eq!(t.path.as_str(), KSERVE_MODEL_INFER);
        assert_eq!(t.host, "127.0.0.1:8001");
        let t = Target::parse("grpc://127.0.0.1:8001/inference.GRPCInferenceService/ServerLive")
            .unwrap();
        assert_eq!(
            t.path.as_str(),
            "/inference.GRPCInferenceService/ServerLive"
        );
    }

    #[test]
    fn bad_urls_name_the_problem() {
        for (url, needle) in [
            ("https://x/", "https is not supported"),
            ("ftp://x/", "unsupported scheme"),
            ("localhost:80", "scheme"),
            ("unix:", "socket path"),
            ("frame+unix:", "socket path"),
            ("http://no-such-host.invalid/", "cannot resolve"),
            ("http://[::1/", "bad URL"),
            ("grpc://127.0.0.1/", "needs a port"),
            (
                "grpc://127.0.0.1:8001/v2/models/m/infer",
                "expected /package.Service/Method",
            ),
            (
                "grpc://127.0.0.1:8001/a.B/C?x=1",
                "expected /package.Service/Method",
            ),
        ] {
            let err = Target::parse(url).unwrap_err();
            assert_eq!(err.code(), "bad_url");
            assert!(err.to_string().contains(needle), "{url}: {err}");
        }
    }
}
