//! The one coded error type of lanes-onnx.
//!
//! Each variant has a stable machine-readable [`OnnxError::code`] (the `code`
//! of `lanes.errors.LanesError` on the Python side) and a one-line message
//! that names the bad value and what is allowed. [`OnnxError::is_request_error`]
//! splits the errors a request causes (a front end answers 400) from those of
//! the library, the device or the model (a server fails to start, or 500).

use std::path::PathBuf;

use thiserror::Error;

/// Why the library, a session or a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OnnxError {
    /// No ONNX Runtime library where the location rule looks (see `library`).
    #[error("{0}")]
    LibraryNotFound(String),
    /// A file was found but it is not a usable ONNX Runtime library.
    #[error("cannot load ONNX Runtime from {path}: {reason}")]
    LibraryLoad { path: PathBuf, reason: String },
    /// A [`SessionConfig`](crate::SessionConfig) field is out of range.
    #[error("{0}")]
    BadConfig(String),
    /// The execution provider asked for is not in the library, or did not start.
    #[error("{0}")]
    ProviderUnavailable(String),
    /// The model path does not name a file.
    #[error("model file {0} does not exist")]
    ModelNotFound(PathBuf),
    /// ONNX Runtime refused the model file.
    #[error("ONNX Runtime cannot load {path}: {reason}")]
    ModelInvalid { path: PathBuf, reason: String },
    /// The model has an input or output native execution does not run
    /// (strings, bfloat16, float8, complex, sequences, maps).
    #[error("{0}")]
    UnsupportedModel(String),
    /// A request lacks an input of the model.
    #[error("missing input '{0}'")]
    MissingInput(String),
    /// A request names an input the model does not have, or names one twice.
    #[error("{0}")]
    UnknownInput(String),
    /// A request's tensor has another datatype than the model's input.
    #[error("input '{name}': datatype {given}, the model takes {expected}")]
    WrongDatatype {
        name: String,
        given: &'static str,
        expected: &'static str,
    },
    /// A request's tensor has a shape the model or the batch cannot take.
    #[error("{0}")]
    BadShape(String),
    /// A request's data is not as long as its shape and datatype say.
    #[error(
        "input '{name}': {given} bytes of data, shape {shape:?} of {datatype} needs {expected}"
    )]
    BadDataSize {
        name: String,
        datatype: &'static str,
        shape: Vec<usize>,
        given: usize,
        expected: usize,
    },
    /// A request's data holds a value its datatype does not allow (a BOOL
    /// byte other than 0 and 1).
    #[error("{0}")]
    BadData(String),
    /// A batch of requests cannot be assembled or split: an input or output of
    /// the model has no batch dimension (a scalar), or an output's first
    /// dimension is not the batch's rows.
    #[error("{0}")]
    NotBatched(String),
    /// ONNX Runtime failed while running the model.
    #[error("ONNX Runtime failed to run the model: {0}")]
    RunFailed(String),
}

impl OnnxError {
    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::LibraryNotFound(_) => "onnxruntime_not_found",
            Self::LibraryLoad { .. } => "onnxruntime_load_failed",
            Self::BadConfig(_) => "bad_config",
            Self::ProviderUnavailable(_) => "device_unavailable",
            Self::ModelNotFound(_) => "model_not_found",
            Self::ModelInvalid { .. } => "model_invalid",
            Self::UnsupportedModel(_) => "model_unsupported",
            Self::MissingInput(_) => "missing_input",
            Self::UnknownInput(_) => "unknown_input",
            Self::WrongDatatype { .. } => "wrong_datatype",
            Self::BadShape(_) => "bad_shape",
            Self::BadDataSize { .. } => "bad_data_size",
            Self::BadData(_) => "bad_data",
            Self::NotBatched(_) => "not_batched",
            Self::RunFailed(_) => "model_failed",
        }
    }

    /// Whether the request caused this error (a front end answers 400); every
    /// other error is the library's, the device's or the model's.
    pub fn is_request_error(&self) -> bool {
        matches!(
            self,
            Self::MissingInput(_)
                | Self::UnknownInput(_)
                | Self::WrongDatatype { .. }
                | Self::BadShape(_)
                | Self::BadDataSize { .. }
                | Self::BadData(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let path = PathBuf::from("m.onnx");
        let s = String::new;
        let cases = [
            (
                OnnxError::LibraryNotFound(s()),
                "onnxruntime_not_found",
                false,
            ),
            (
                OnnxError::LibraryLoad {
                    path: path.clone(),
                    reason: s(),
                },
                "onnxruntime_load_failed",
                false,
            ),
            (OnnxError::BadConfig(s()), "bad_config", false),
            (
                OnnxError::ProviderUnavailable(s()),
                "device_unavailable",
                false,
            ),
            (
                OnnxError::ModelNotFound(path.clone()),
                "model_not_found",
                false,
            ),
            (
                OnnxError::ModelInvalid { path, reason: s() },
                "model_invalid",
                false,
            ),
            (OnnxError::UnsupportedModel(s()), "model_unsupported", false),
            (OnnxError::MissingInput(s()), "missing_input", true),
            (OnnxError::UnknownInput(s()), "unknown_input", true),
            (
                OnnxError::WrongDatatype {
                    name: s(),
                    given: "FP32",
                    expected: "FP64",
                },
                "wrong_datatype",
                true,
            ),
            (OnnxError::BadShape(s()), "bad_shape", true),
            (
                OnnxError::BadDataSize {
                    name: s(),
                    datatype: "FP32",
                    shape: vec![1],
                    given: 0,
                    expected: 4,
                },
                "bad_data_size",
                true,
            ),
            (OnnxError::BadData(s()), "bad_data", true),
            (OnnxError::NotBatched(s()), "not_batched", false),
            (OnnxError::RunFailed(s()), "model_failed", false),
        ];
        for (error, code, request) in cases {
            assert_eq!(error.code(), code);
            assert_eq!(error.is_request_error(), request, "{code}");
        }
    }
}
