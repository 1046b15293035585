//! Fuzz target: `lanes_arbiter::protocol::decode` on arbitrary frame bodies,
//! and `frame_len` on their first four bytes.
//!
//! Properties: neither ever panics; a body that decodes re-encodes to exactly
//! the same bytes (the codec is canonical), so nothing the daemon accepts is
//! read differently from how it would be written.
#![no_main]

use lanes_arbiter::protocol::{decode, encode, frame_len, MAX_FRAME};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(prefix) = data.get(..4) {
        let _ = frame_len(prefix.try_into().expect("4 bytes"));
    }
    if data.len() > MAX_FRAME {
        return;
    }
    if let Ok(message) = decode(data) {
        let mut again = Vec::with_capacity(data.len());
        encode(&message, &mut again);
        assert_eq!(again, data, "{message:?} re-encodes differently");
    }
});
