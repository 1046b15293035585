//! The one coded error of the wire layer, and the one place it maps to HTTP and
//! gRPC.
//!
//! [`KserveError`] is either a wire problem found at the edge (a malformed
//! request, a body over the limit, an output the server cannot encode) or a
//! [`ServeError`] of the serving state (queue full, deadline, unknown model),
//! carried unchanged. [`KserveError::code`] is the stable machine-readable
//! code, [`KserveError::http_status`] the REST status (the serving errors keep
//! the statuses `ServeError::http_status` gives them) and
//! [`KserveError::grpc_code`] the gRPC status code; the front ends use these and
//! never read message text. REST error bodies are `{"error": message}`
//! ([`KserveError::json_body`]).

use lanes_serving::ServeError;
use thiserror::Error;
use tonic::Code;

/// A request the server refuses or fails, with its message.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum KserveError {
    /// A malformed or inconsistent request (HTTP 400).
    #[error("{0}")]
    BadRequest(String),
    /// A request body over the configured limit (HTTP 413).
    #[error("{0}")]
    BodyTooLarge(String),
    /// The server cannot encode what the model returned (HTTP 500).
    #[error("{0}")]
    Internal(String),
    /// A refusal or failure of the serving state.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

impl KserveError {
    /// The stable code of this error (the serving state's own for [`Self::Serve`]).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::BodyTooLarge(_) => "body_too_large",
            Self::Internal(_) => "internal",
            Self::Serve(e) => e.code(),
        }
    }

    /// The HTTP status of this error.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::BodyTooLarge(_) => 413,
            Self::Internal(_) => 500,
            Self::Serve(e) => e.http_status(),
        }
    }

    /// The gRPC status code of this error: the canonical code of each case
    /// (a full queue is `RESOURCE_EXHAUSTED`, a deadline `DEADLINE_EXCEEDED`,
    /// an unknown model `NOT_FOUND`, a model the host cannot serve `INTERNAL`).
    pub fn grpc_code(&self) -> Code {
        match self {
            Self::BadRequest(_) => Code::InvalidArgument,
            Self::BodyTooLarge(_) => Code::ResourceExhausted,
            Self::Internal(_) => Code::Internal,
            Self::Serve(e) => match e {
                ServeError::QueueFull { .. } => Code::ResourceExhausted,
                ServeError::DeadlineExceeded { .. } | ServeError::DeadlineUnreachable { .. } => {
                    Code::DeadlineExceeded
                }
                ServeError::UnknownModel { .. } => Code::NotFound,
                ServeError::BadRows { .. } => Code::InvalidArgument,
                ServeError::BadModel { .. } => Code::Internal,
                ServeError::Refused { .. } => Code::Unavailable,
            },
        }
    }

    /// The REST error body: `{"error": message}`.
    pub fn json_body(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "error": self.to_string() }))
            .expect("a JSON object of one string serialises")
    }

    /// The gRPC status: [`Self::grpc_code`] with the message.
    pub fn to_status(&self) -> tonic::Status {
        tonic::Status::new(self.grpc_code(), self.to_string())
    }

    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }
}

impl From<KserveError> for tonic::Status {
    fn from(error: KserveError) -> Self {
        error.to_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_maps_to_one_code_status_and_grpc_code() {
        let serve = |e: ServeError| KserveError::Serve(e);
        let cases = [
            (
                KserveError::bad("x"),
                "bad_request",
                400,
                Code::InvalidArgument,
            ),
            (
                KserveError::BodyTooLarge("x".into()),
                "body_too_large",
                413,
                Code::ResourceExhausted,
            ),
            (
                KserveError::Internal("x".into()),
                "internal",
                500,
                Code::Internal,
            ),
            (
                serve(ServeError::QueueFull {
                    model: "m".into(),
                    bound: 8,
                    max_enqueued_batches: 2,
                    max_batch_size: 4,
                }),
                "queue_full",
                429,
                Code::ResourceExhausted,
            ),
            (
                serve(ServeError::DeadlineExceeded {
                    model: "m".into(),
                    waited_ms: 1.0,
                }),
                "deadline_exceeded",
                504,
                Code::DeadlineExceeded,
            ),
            (
                serve(ServeError::DeadlineUnreachable {
                    model: "m".into(),
                    queued: false,
                }),
                "deadline_unreachable",
                504,
                Code::DeadlineExceeded,
            ),
            (
                serve(ServeError::UnknownModel { model: 3 }),
                "model_not_found",
                404,
                Code::NotFound,
            ),
            (
                serve(ServeError::BadRows {
                    model: "m".into(),
                    rows: 0,
                    allowed: "at least 1",
                }),
                "bad_request",
                400,
                Code::InvalidArgument,
            ),
            (
                serve(ServeError::BadModel {
                    model: "m".into(),
                    reason: "r".into(),
                }),
                "bad_model",
                500,
                Code::Internal,
            ),
        ];
        for (error, code, status, grpc) in cases {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.http_status(), status, "{error:?}");
            assert_eq!(error.grpc_code(), grpc, "{error:?}");
            let status = tonic::Status::from(error.clone());
            assert_eq!(status.message(), error.to_string());
        }
    }

    #[test]
    fn json_body_is_one_error_member() {
        let body = KserveError::bad("input 'x': \"quoted\"").json_body();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value, serde_json::json!({"error": "input 'x': \"quoted\""}));
    }
}
