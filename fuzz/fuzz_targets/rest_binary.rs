//! Fuzz target: the binary tensor data extension. The first byte `n` (mod 25)
//! is the length of the `Inference-Header-Content-Length` value that follows
//! (n = 24: no header); the rest is the body. The value goes through
//! `parse_header_length`, then `decode_request`.
//!
//! Properties: never panics; refusals are 400/413; accepted requests hold
//! consistent tensors that encode back (kserve_common.rs).
#![no_main]

use bytes::Bytes;
use lanes_kserve::rest::{decode_request, parse_header_length};
use lanes_kserve::{CodecConfig, ModelRef};
use libfuzzer_sys::fuzz_target;

#[path = "kserve_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 25);
    let (value, body) = if n == 24 {
        (None, rest)
    } else if rest.len() >= n {
        let (value, body) = rest.split_at(n);
        (Some(value), body)
    } else {
        return;
    };
    let header_length = match parse_header_length(value) {
        Ok(h) => h,
        Err(e) => {
            assert_eq!(e.http_status(), 400);
            return;
        }
    };
    let body = Bytes::copy_from_slice(body);
    let config = CodecConfig::default();
    common::check(decode_request(
        ModelRef::default(),
        body,
        header_length,
        &config,
    ));
});
