//! A model's declared inputs and outputs, and the edge's check of a decoded
//! request against them (codec.py's `check_inputs` / `check_outputs`).
//!
//! **Rule.** Every declared input must be present and no other; datatypes
//! must match; a shape must have the declared rank and match every declared
//! size (`-1` matches any). When the model batches, the first dimension is the
//! batch dimension: at least 1 and the same in every input — the request's
//! rows. A named output the model does not declare is refused too, so a bad
//! request is a 400 before it queues, never a failed batch.

use lanes_kserve::{Datatype, InferRequest, KserveError};
use serde_json::{json, Value};

/// One declared tensor: `-1` in `shape` is any size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub datatype: Datatype,
    pub shape: Vec<i64>,
}

impl Spec {
    /// KServe's tensor metadata: `{"name", "datatype", "shape"}`.
    pub fn metadata(&self) -> Value {
        json!({"name": self.name, "datatype": self.datatype.name(), "shape": self.shape})
    }
}

/// A model's inputs and outputs, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub inputs: Vec<Spec>,
    pub outputs: Vec<Spec>,
}

fn bad(message: String) -> KserveError {
    KserveError::BadRequest(message)
}

fn list(shape: &[impl std::fmt::Display]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

impl Signature {
    /// Checks `request` against the declaration (the module's rule) and
    /// returns its rows: the batch dimension when `batching`, else 1.
    pub fn check(&self, request: &InferRequest, batching: bool) -> Result<u32, KserveError> {
        let declared = || {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            names.join(", ")
        };
        for input in &request.inputs {
            if !self.inputs.iter().any(|s| s.name == input.name) {
                return Err(bad(format!(
                    "unknown input '{}'; the model's inputs are: {}",
                    input.name,
                    declared()
                )));
            }
        }
        let missing: Vec<&str> = self
            .inputs
            .iter()
            .filter(|s| request.input(&s.name).is_none())
            .map(|s| s.name.as_str())
            .collect();
        if !missing.is_empty() {
            let s = if missing.len() > 1 { "s" } else { "" };
            return Err(bad(format!("missing input{s} {}", missing.join(", "))));
        }
        let mut batch: Option<(&str, u64)> = None;
        for spec in &self.inputs {
            let tensor = request.input(&spec.name).expect("checked present");
            if tensor.datatype() != spec.datatype {
                return Err(bad(format!(
                    "input '{}': datatype {}, expected {}",
                    spec.name,
                    tensor.datatype(),
                    spec.datatype
                )));
            }
            let shape = tensor.shape();
            let fits = shape.len() == spec.shape.len()
                && spec
                    .shape
                    .iter()
                    .zip(shape)
                    .all(|(&d, &n)| d == -1 || u64::try_from(d) == Ok(n));
            if !fits {
                return Err(bad(format!(
                    "input '{}': shape {} does not match the declared shape {}",
                    spec.name,
                    list(shape),
                    list(&spec.shape)
                )));
            }
            if let (true, Some(&rows)) = (batching, shape.first()) {
                if rows < 1 {
                    return Err(bad(format!(
                        "input '{}': the batch dimension is 0; it must be >= 1",
                        spec.name
                    )));
                }
                match batch {
                    None => batch = Some((&spec.name, rows)),
                    Some((first, n)) if n != rows => {
                        return Err(bad(format!(
                            "inputs disagree on the batch size: '{first}' has {n} rows, '{}' has \
                             {rows}",
                            spec.name
                        )))
                    }
                    Some(_) => {}
                }
            }
        }
        if let Some(outputs) = &request.outputs {
            for output in outputs {
                if !self.outputs.iter().any(|s| s.name == output.name) {
                    let names: Vec<&str> = self.outputs.iter().map(|s| s.name.as_str()).collect();
                    return Err(bad(format!(
                        "unknown output '{}'; the model's outputs are: {}",
                        output.name,
                        names.join(", ")
                    )));
                }
            }
        }
        let rows = batch.map_or(1, |(_, n)| n);
        u32::try_from(rows).map_err(|_| bad(format!("a batch of {rows} rows is too large")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lanes_kserve::rest::decode_request;
    use lanes_kserve::{CodecConfig, ModelRef};

    fn signature() -> Signature {
        let spec = |name: &str, datatype, shape: &[i64]| Spec {
            name: name.into(),
            datatype,
            shape: shape.to_vec(),
        };
        Signature {
            inputs: vec![
                spec("x", Datatype::Fp32, &[-1, 2]),
                spec("k", Datatype::Int64, &[-1]),
            ],
            outputs: vec![spec("y", Datatype::Fp32, &[-1, 2])],
        }
    }

    fn request(json: &str) -> InferRequest {
        let body = bytes::Bytes::copy_from_slice(json.as_bytes());
        decode_request(ModelRef::default(), body, None, &CodecConfig::default()).unwrap()
    }

    const X1: &str = r#"{"name":"x","shape":[1,2],"datatype":"FP32","data":[1,2]}"#;
    const K1: &str = r#"{"name":"k","shape":[1],"datatype":"INT64","data":[3]}"#;

    #[test]
    fn requests_are_checked_against_the_declaration() {
        let x2 = r#"{"name":"x","shape":[2,2],"datatype":"FP32","data":[1,2,3,4]}"#;
        let k2 = r#"{"name":"k","shape":[2],"datatype":"INT64","data":[3,4]}"#;
        let table: &[(String, bool, Result<u32, &str>)] = &[
            (format!(r#"{{"inputs":[{X1},{K1}]}}"#), true, Ok(1)),
            (format!(r#"{{"inputs":[{x2},{k2}]}}"#), true, Ok(2)),
            (format!(r#"{{"inputs":[{x2},{k2}]}}"#), false, Ok(1)),
            (
                format!(r#"{{"inputs":[{X1}]}}"#),
                true,
                Err("missing input k"),
            ),
            (
                format!(
                    r#"{{"inputs":[{X1},{K1},{{"name":"z","shape":[1],"datatype":"FP32","data":[1]}}]}}"#
                ),
                true,
                Err("unknown input 'z'; the model's inputs are: x, k"),
            ),
            (
                format!(
                    r#"{{"inputs":[{K1},{{"name":"x","shape":[1,2],"datatype":"FP64","data":[1,2]}}]}}"#
                ),
                true,
                Err("input 'x': datatype FP64, expected FP32"),
            ),
            (
                format!(
                    r#"{{"inputs":[{K1},{{"name":"x","shape":[2],"datatype":"FP32","data":[1,2]}}]}}"#
                ),
                true,
                Err("input 'x': shape [2] does not match the declared shape [-1, 2]"),
            ),
            (
                format!(r#"{{"inputs":[{X1},{k2}]}}"#),
                true,
                Err("inputs disagree on the batch size: 'x' has 1 rows, 'k' has 2"),
            ),
            (
                format!(r#"{{"inputs":[{X1},{K1}],"outputs":[{{"name":"q"}}]}}"#),
                true,
                Err("unknown output 'q'; the model's outputs are: y"),
            ),
        ];
        for (body, batching, expected) in table {
            let got = signature().check(&request(body), *batching);
            match (got, expected) {
                (Ok(rows), Ok(want)) => assert_eq!(rows, *want, "{body}"),
                (Err(e), Err(want)) => {
                    assert_eq!((e.http_status(), e.to_string().as_str()), (400, *want))
                }
                (got, want) => panic!("{body}: got {got:?}, want {want:?}"),
            }
        }
    }
}
