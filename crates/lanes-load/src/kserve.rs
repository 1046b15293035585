//! KServe v2 REST requests sent as gRPC calls, so one corpus (or one
//! `--body-file`) drives a server over either protocol.
//!
//! **Rule.** For a `grpc://` target, an entry is a KServe REST request when its
//! path is a REST infer path, `/v2/models/<name>[/versions/<v>]/infer` (what
//! `lanes bench corpus` writes), or when the run names a model
//! (`kserve_model`, for a single body whose path is the gRPC method). Such an
//! entry's body — JSON, or the binary tensor extension when it carries
//! `Inference-Header-Content-Length` — is decoded with the server's own REST
//! codec and written as the `ModelInferRequest` that the server's gRPC codec
//! maps back to the same request (lanes-kserve's [`grpc::encode_request`]);
//! its path becomes the target's method and the REST-only headers are dropped.
//! Any other entry's body is sent as it is: a protobuf message.

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::uri::PathAndQuery;
use lanes_kserve::rest::{decode_request, parse_header_length, HEADER_LENGTH};
use lanes_kserve::{grpc, CodecConfig, ModelRef};
use prost::Message;

use crate::corpus::Entry;
use crate::error::LoadError;

/// The model of a REST infer path, None for any other path.
pub fn infer_path_model(path: &str) -> Option<ModelRef> {
    let rest = path.strip_prefix("/v2/models/")?.strip_suffix("/infer")?;
    let (name, version) = match rest.split_once("/versions/") {
        Some((name, version)) => (name, Some(version)),
        None => (rest, None),
    };
    let plain = |s: &str| !s.is_empty() && !s.contains('/');
    if !plain(name) || version.is_some_and(|v| !plain(v)) {
        return None;
    }
    Some(ModelRef {
        name: name.to_owned(),
        version: version.map(str::to_owned),
    })
}

/// `entry` as a gRPC call to `method`: converted when it is a KServe REST
/// request (see the module rule; `model` names the model of entries whose
/// path does not), else unchanged. `number` (from 1) names it in errors.
pub fn to_grpc(
    entry: Entry,
    number: usize,
    method: &PathAndQuery,
    model: Option<&str>,
) -> Result<Entry, LoadError> {
    let model = match (infer_path_model(entry.path.path()), model) {
        (Some(m), _) => m,
        (None, Some(name)) => ModelRef {
            name: name.to_owned(),
            version: None,
        },
        (None, None) => return Ok(entry),
    };
    let bad = |why: String| {
        LoadError::Corpus(format!(
            "request {number} (model {:?}) cannot be sent over gRPC: {why}",
            model.name
        ))
    };
    let header_length = parse_header_length(entry.headers.get(HEADER_LENGTH).map(|v| v.as_bytes()))
        .map_err(|e| bad(e.to_string()))?;
    let request = decode_request(
        model.clone(),
        entry.body.clone(),
        header_length,
        &CodecConfig::default(),
    )
    .map_err(|e| bad(e.to_string()))?;
    let message = grpc::encode_request(&request).map_err(|e| bad(e.to_string()))?;
    let mut headers = entry.headers;
    for rest_only in [CONTENT_TYPE, CONTENT_LENGTH] {
        headers.remove(rest_only);
    }
    headers.remove(HEADER_LENGTH);
    Ok(Entry {
        method: entry.method,
        path: method.clone(),
        headers,
        body: Bytes::from(message.encode_to_vec()),
        weight: entry.weight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue, Method};
    use lanes_kserve::proto::ModelInferRequest;

    fn entry(path: &str, body: &[u8], headers: &[(&'static str, &str)]) -> Entry {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        Entry {
            method: Method::POST,
            path: PathAndQuery::try_from(path).unwrap(),
            headers: map,
            body: Bytes::copy_from_slice(body),
            weight: 2.0,
        }
    }

    fn method() -> PathAndQuery {
        PathAndQuery::from_static(crate::target::KSERVE_MODEL_INFER)
    }

    #[test]
    fn infer_paths_name_their_model() {
        let m = infer_path_model("/v2/models/char_cnn/infer").unwrap();
        assert_eq!((m.name.as_str(), m.version), ("char_cnn", None));
        let m = infer_path_model("/v2/models/m/versions/2/infer").unwrap();
        assert_eq!(m.version.as_deref(), Some("2"));
        for other in [
            "/v2/models/m",
            "/v2/models//infer",
            "/v2/models/a/b/infer",
            "/x",
        ] {
            assert!(infer_path_model(other).is_none(), "{other}");
        }
    }

    #[test]
    fn rest_bodies_become_model_infer_requests() {
        let body =
            br#"{"id":"7","inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[1,2]}]}"#;
        let e = entry(
            "/v2/models/m/versions/3/infer",
            body,
            &[
                ("content-type", "application/json"),
                ("grpc-timeout", "20m"),
            ],
        );
        let out = to_grpc(e, 1, &method(), None).unwrap();
        assert_eq!(out.path, method());
        assert_eq!(out.weight, 2.0);
        assert!(out.headers.get(CONTENT_TYPE).is_none());
        assert_eq!(out.headers.get("grpc-timeout").unwrap(), "20m");
        let m = ModelInferRequest::decode(out.body).unwrap();
        assert_eq!(
            (m.model_name.as_str(), m.model_version.as_str()),
            ("m", "3")
        );
        assert_eq!(m.id, "7");
        assert_eq!(m.inputs[0].shape, [1, 2]);
        let want: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(m.raw_input_contents[0], want);
    }

    #[test]
    fn binary_extension_bodies_are_read_with_their_header_length() {
        let json = br#"{"inputs":[{"name":"x","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":8}}]}"#;
        let mut body = json.to_vec();
        body.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
        let len = json.len().to_string();
        let e = entry("/", &body, &[(HEADER_LENGTH, &len)]);
        let out = to_grpc(e, 1, &method(), Some("ids")).unwrap();
        assert!(out.headers.get(HEADER_LENGTH).is_none());
        let m = ModelInferRequest::decode(out.body).unwrap();
        assert_eq!(m.model_name, "ids");
        assert_eq!(m.raw_input_contents[0], [1, 0, 0, 0, 2, 0, 0, 0][..]);
    }

    #[test]
    fn other_bodies_pass_as_protobuf_and_bad_rest_bodies_name_the_request() {
        let e = entry("/", b"\x0a\x01m", &[]);
        let out = to_grpc(e, 1, &method(), None).unwrap();
        assert_eq!(&out.body[..], b"\x0a\x01m");
        let e = entry("/v2/models/m/infer", b"{\"inputs\": 3}", &[]);
        let err = to_grpc(e, 4, &method(), None).unwrap_err();
        assert_eq!(err.code(), "corpus_invalid");
        assert!(
            err.to_string()
                .starts_with("request 4 (model \"m\") cannot be sent over gRPC:"),
            "{err}"
        );
    }
}
