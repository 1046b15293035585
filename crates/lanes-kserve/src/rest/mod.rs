//! The KServe v2 REST codec: `POST /v2/models/<model>[/versions/<v>]/infer`
//! bodies to [`InferRequest`](crate::InferRequest), and
//! [`InferResponse`](crate::InferResponse)s to bodies, in the JSON form and the
//! binary tensor data extension.
//!
//! The semantics, limits and messages are those of
//! `python/lanes/serving/codec.py` (the aiohttp server's codec), whose tests
//! are ported to `tests/rest.rs`:
//! - [`parse_header_length`] reads the `Inference-Header-Content-Length`
//!   header; [`decode_request`] splits the body there into the JSON header and
//!   the binary tensor data (`decode`), reading JSON `data` with numpy's
//!   semantics (`data`);
//! - [`encode_response`] writes the JSON header and appends binary outputs
//!   (`encode`).
//!
//! JSON is parsed by `serde_json` (RFC 8259: no `NaN` literals; integers past
//! 64 bits read as floats; nesting within 128 levels, where orjson allows
//! 1,024).

mod data;
mod decode;
mod encode;

pub use decode::{decode_request, parse_header_length};
pub use encode::{encode_response, EncodedResponse};

/// The HTTP header giving the JSON header's length in a body with binary tensor data.
pub const HEADER_LENGTH: &str = "Inference-Header-Content-Length";
/// The content type of an all-JSON response.
pub const JSON_CONTENT_TYPE: &str = "application/json";
/// The content type of a response with binary outputs.
pub const BINARY_CONTENT_TYPE: &str = "application/octet-stream";
