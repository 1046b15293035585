//! Decodes REST bodies from files and prints one JSON line per file — `{"file",
//! "status", "message"}`, status 200 for an accepted request — for comparing
//! this codec with the Python one on the same bodies
//! (`tests/fixtures/compare_codecs.py`). A file whose name ends in `.bin`
//! holds the `rest_binary` fuzz target's form: a length byte, the
//! `Inference-Header-Content-Length` value, then the body.

use bytes::Bytes;
use lanes_kserve::rest::{decode_request, parse_header_length};
use lanes_kserve::{CodecConfig, KserveError, ModelRef};
use serde_json::json;

fn decode(data: &[u8], framed: bool) -> Result<(), KserveError> {
    let (value, body) = if framed {
        let Some((&n, rest)) = data.split_first() else {
            return Ok(());
        };
        let n = usize::from(n % 25);
        match (n == 24, rest.len() >= n) {
            (true, _) => (None, rest),
            (false, true) => (Some(&rest[..n]), &rest[n..]),
            (false, false) => return Ok(()),
        }
    } else {
        (None, data)
    };
    let header_length = parse_header_length(value)?;
    let body = Bytes::copy_from_slice(body);
    decode_request(
        ModelRef::default(),
        body,
        header_length,
        &CodecConfig::default(),
    )
    .map(|_| ())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for file in std::env::args().skip(1) {
        let data = std::fs::read(&file)?;
        let (status, message) = match decode(&data, file.ends_with(".bin")) {
            Ok(()) => (200, String::new()),
            Err(e) => (e.http_status(), e.to_string()),
        };
        println!(
            "{}",
            json!({"file": file, "status": status, "message": message})
        );
    }
    Ok(())
}
