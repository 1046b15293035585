//! How a refused connection ends: what a client gets whose request head
//! missed its deadline (`408` with lanes' JSON error body and
//! `Connection: close`, written on the raw socket: hyper gives the connection
//! back without answering), and the lingering close after that 408 and after
//! hyper's own `431` for a head over the limit.
//!
//! **Rule** (lingering close): after the answer the server shuts its write
//! side and reads and discards what the client still sends, until the
//! client closes, [`LINGER`] passes or the byte budget was read, then
//! closes. Closing at once with unread bytes in the socket would make the
//! kernel send a reset, which can destroy the answer before the client reads
//! it.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::app::Failure;

/// The longest a refused connection is kept to drain the client's bytes.
pub const LINGER: Duration = Duration::from_secs(1);

/// The most bytes read and discarded while lingering after a 408.
pub const LINGER_BYTES: usize = 64 * 1024;

/// The most bytes read and discarded while lingering after a 431: the rest
/// of a head over the limit, which the client is still sending.
pub const LINGER_BYTES_TOO_LARGE: usize = 16 * 1024 * 1024;

/// The whole HTTP/1.1 response for `failure`: its status, the JSON error
/// body the routes answer with, and `Connection: close`.
pub fn response(failure: &Failure) -> Vec<u8> {
    let status = http::StatusCode::from_u16(failure.http_status())
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::json!({ "error": failure.to_string() }).to_string();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

/// Answers 408 for a head not received `within`, then closes lingering.
pub async fn refuse(mut stream: TcpStream, within: Duration) {
    let failure = Failure::HeadTimeout(format!(
        "request head not received within {} s",
        within.as_secs_f64()
    ));
    let answer = response(&failure);
    let written = tokio::time::timeout(LINGER, async {
        stream.write_all(&answer).await?;
        stream.shutdown().await
    });
    if matches!(written.await, Ok(Ok(()))) {
        drain(stream, LINGER_BYTES).await;
    }
}

/// The lingering close after an answer hyper wrote itself (`431` for a head
/// over the limit): shut the write side, then drain up to `budget` bytes.
pub async fn linger(mut stream: TcpStream, budget: usize) {
    if matches!(
        tokio::time::timeout(LINGER, stream.shutdown()).await,
        Ok(Ok(()))
    ) {
        drain(stream, budget).await;
    }
}

/// Reads and discards until the client closes, [`LINGER`] passes or
/// `budget` bytes were read.
async fn drain(mut stream: TcpStream, budget: usize) {
    let mut sink = [0u8; 4096];
    let mut read = 0;
    let _ = tokio::time::timeout(LINGER, async {
        while read < budget {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read += n,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_a_whole_408_with_the_json_error_and_connection_close() {
        let failure = Failure::HeadTimeout("request head not received within 0.3 s".into());
        assert_eq!(failure.code(), "header_timeout");
        let text = String::from_utf8(response(&failure)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nconnection: close"), "{head}");
        assert!(
            head.contains("\r\ncontent-type: application/json"),
            "{head}"
        );
        assert!(
            head.contains(&format!("\r\ncontent-length: {}", body.len())),
            "{head}"
        );
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"error": "request head not received within 0.3 s"})
        );
    }
}
