//! Batch assembly: N requests' input tensors checked against the model and
//! laid out as one tensor per input, and the outputs split back per request.
//!
//! The rule ([`assemble`] with `batched`):
//!
//! 1. Every request gives every input of the model exactly once, by name, and
//!    nothing else (`missing_input`, `unknown_input`).
//! 2. Each tensor has the model's datatype (`wrong_datatype`), the model's
//!    rank (`bad_shape`), and data of exactly `product(shape) x size` bytes
//!    (`bad_data_size`).
//! 3. The first dimension is the request's rows: at least 1, the same for all
//!    of a request's inputs (`bad_shape`). A model input without dimensions (a
//!    scalar) cannot be batched (`not_batched`).
//! 4. The dimensions after the first agree among all requests, input by input
//!    — even where the model leaves them dynamic, since the tensors are
//!    concatenated — and with every size the model fixes (`bad_shape`).
//! 5. The batch's input is the requests' data concatenated along dimension 0
//!    in request order: shape `[sum of rows, dims after the first...]`. A
//!    first dimension the model fixes must equal that sum (`bad_shape`).
//!
//! Splitting ([`split`]): every output's first dimension must equal the
//! batch's rows (`not_batched` otherwise: an output without a batch
//! dimension, such as a scalar sum over the batch, cannot be shared out);
//! request `i` gets rows `[offset_i, offset_i + rows_i)` of every output, as a
//! slice of the one copy of the output's data.
//!
//! Unbatched ([`assemble`] without `batched`, one request): rules 1 and 2 and
//! the model's fixed sizes apply; the request's tensors pass as they are and
//! the outputs come back whole, whatever their shapes.

use bytes::Bytes;

use crate::{InputTensor, OnnxError, OutputTensor, TensorSpec};

/// The model's inputs laid out for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assembled<'a> {
    /// One entry per model input, in the model's order.
    pub inputs: Vec<AssembledInput<'a>>,
    /// Each request's rows (the first dimension of its tensors).
    pub rows: Vec<usize>,
}

/// One model input of a run: the requests' data, to be concatenated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AssembledInput<'a> {
    pub shape: Vec<usize>,
    pub parts: Vec<&'a [u8]>,
}

/// Checks `requests` against the model's `inputs` and lays them out (see the
/// module overview; without `batched`, `requests` holds one request).
pub(crate) fn assemble<'a>(
    inputs: &[TensorSpec],
    requests: &[&[InputTensor<'a>]],
    batched: bool,
) -> Result<Assembled<'a>, OnnxError> {
    let several = requests.len() > 1;
    let at = |r: usize| {
        if several {
            format!("request {r}: ")
        } else {
            String::new()
        }
    };
    let mut rows = Vec::with_capacity(requests.len());
    let mut assembled: Vec<AssembledInput<'a>> = inputs
        .iter()
        .map(|_| AssembledInput {
            shape: Vec::new(),
            parts: Vec::with_capacity(requests.len()),
        })
        .collect();
    for (r, request) in requests.iter().enumerate() {
        for (i, t) in request.iter().enumerate() {
            if !inputs.iter().any(|s| s.name == t.name) {
                let names: Vec<&str> = inputs.iter().map(|s| s.name.as_str()).collect();
                return Err(OnnxError::UnknownInput(format!(
                    "{}input '{}' is not an input of the model; its inputs are {}",
                    at(r),
                    t.name,
                    names.join(", ")
                )));
            }
            if request[..i].iter().any(|u| u.name == t.name) {
                return Err(OnnxError::UnknownInput(format!(
                    "{}input '{}' is given twice",
                    at(r),
                    t.name
                )));
            }
        }
        let mut request_rows = None;
        for (spec, slot) in inputs.iter().zip(&mut assembled) {
            let t = request
                .iter()
                .find(|t| t.name == spec.name)
                .ok_or_else(|| OnnxError::MissingInput(spec.name.clone()))?;
            check_tensor(spec, t, &at(r), batched)?;
            if batched {
                let Some(&first) = t.shape.first() else {
                    return Err(OnnxError::NotBatched(format!(
                        "input '{}' is a scalar: it has no batch dimension to concatenate along",
                        spec.name
                    )));
                };
                if first == 0 {
                    return Err(OnnxError::BadShape(format!(
                        "{}input '{}' has shape {:?}: the first (batch) dimension must be at least 1",
                        at(r),
                        spec.name,
                        t.shape
                    )));
                }
                match request_rows {
                    None => request_rows = Some((first, &spec.name)),
                    Some((n, other)) if n != first => {
                        return Err(OnnxError::BadShape(format!(
                            "{}input '{}' has {first} rows but input '{other}' has {n}: a \
                             request's inputs must agree on the first (batch) dimension",
                            at(r),
                            spec.name
                        )));
                    }
                    Some(_) => {}
                }
                if r == 0 {
                    slot.shape = t.shape.to_vec();
                } else if slot.shape[1..] != t.shape[1..] {
                    return Err(OnnxError::BadShape(format!(
                        "{}input '{}' has shape {:?} but request 0 has {:?}: the dimensions \
                         after the first must agree to batch",
                        at(r),
                        spec.name,
                        t.shape,
                        slot.shape
                    )));
                } else {
                    slot.shape[0] += first;
                }
            } else {
                slot.shape = t.shape.to_vec();
            }
            slot.parts.push(t.data);
        }
        rows.push(request_rows.map_or(1, |(n, _)| n));
    }
    if batched {
        for (spec, slot) in inputs.iter().zip(&assembled) {
            if let (Some(fixed), Some(&total)) = (spec.dims[0].fixed(), slot.shape.first()) {
                if fixed != total {
                    return Err(OnnxError::BadShape(format!(
                        "input '{}' has a fixed first dimension {fixed} ({}) but the batch has \
                         {total} rows",
                        spec.name,
                        spec.shape_text()
                    )));
                }
            }
        }
    }
    Ok(Assembled {
        inputs: assembled,
        rows,
    })
}

/// Rule 2 and the model's fixed sizes, for one tensor: all of them unbatched,
/// those after the first when `batched` (the batch's first is checked whole).
fn check_tensor(
    spec: &TensorSpec,
    t: &InputTensor<'_>,
    at: &str,
    batched: bool,
) -> Result<(), OnnxError> {
    if t.datatype != spec.datatype {
        return Err(OnnxError::WrongDatatype {
            name: spec.name.clone(),
            given: t.datatype.name(),
            expected: spec.datatype.name(),
        });
    }
    if t.shape.len() != spec.dims.len() {
        return Err(OnnxError::BadShape(format!(
            "{at}input '{}' has shape {:?} (rank {}) but the model takes {} (rank {})",
            spec.name,
            t.shape,
            t.shape.len(),
            spec.shape_text(),
            spec.dims.len()
        )));
    }
    let first = usize::from(batched);
    for (i, (&given, dim)) in t.shape.iter().zip(&spec.dims).enumerate().skip(first) {
        if dim.fixed().is_some_and(|fixed| fixed != given) {
            return Err(OnnxError::BadShape(format!(
                "{at}input '{}' has shape {:?} but the model takes {}: dimension {i} must be {dim}",
                spec.name,
                t.shape,
                spec.shape_text()
            )));
        }
    }
    let expected = t
        .shape
        .iter()
        .try_fold(spec.datatype.size(), |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            OnnxError::BadShape(format!(
                "{at}input '{}' has shape {:?}: too large",
                spec.name, t.shape
            ))
        })?;
    if t.data.len() != expected {
        return Err(OnnxError::BadDataSize {
            name: spec.name.clone(),
            datatype: spec.datatype.name(),
            shape: t.shape.to_vec(),
            given: t.data.len(),
            expected,
        });
    }
    Ok(())
}

/// Splits one output of a batch among requests of `rows` rows each (see the
/// module overview); `out[i]` receives request `i`'s share.
pub(crate) fn split(
    name: &str,
    output: OutputTensor,
    rows: &[usize],
    out: &mut [Vec<OutputTensor>],
) -> Result<(), OnnxError> {
    let total: usize = rows.iter().sum();
    match output.shape.first() {
        Some(&first) if first == total => {}
        _ => {
            return Err(OnnxError::NotBatched(format!(
                "output '{name}' has shape {:?}, not a first dimension of the batch's {total} \
                 rows: it cannot be split among the requests",
                output.shape
            )));
        }
    }
    let row_bytes = output.data.len().checked_div(total).unwrap_or(0);
    let mut offset = 0;
    for (&n, request) in rows.iter().zip(out) {
        let mut shape = output.shape.clone();
        shape[0] = n;
        let data: Bytes = output
            .data
            .slice(offset * row_bytes..(offset + n) * row_bytes);
        request.push(OutputTensor {
            datatype: output.datatype,
            shape,
            data,
        });
        offset += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Datatype, Dim};

    fn spec(name: &str, datatype: Datatype, dims: &[Option<usize>]) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            datatype,
            dims: dims
                .iter()
                .map(|d| d.map_or(Dim::Symbolic("N".into()), Dim::Fixed))
                .collect(),
        }
    }

    /// A model with `x` FP32 [N, 2] and `k` INT64 [N].
    fn model() -> Vec<TensorSpec> {
        vec![
            spec("x", Datatype::Fp32, &[None, Some(2)]),
            spec("k", Datatype::Int64, &[None]),
        ]
    }

    const X1: [u8; 8] = [1; 8];
    const X2: [u8; 16] = [2; 16];
    const K1: [u8; 8] = [3; 8];
    const K2: [u8; 16] = [4; 16];

    fn x<'a>(shape: &'a [usize], data: &'a [u8]) -> InputTensor<'a> {
        InputTensor {
            name: "x",
            datatype: Datatype::Fp32,
            shape,
            data,
        }
    }

    fn k<'a>(shape: &'a [usize], data: &'a [u8]) -> InputTensor<'a> {
        InputTensor {
            name: "k",
            datatype: Datatype::Int64,
            shape,
            data,
        }
    }

    #[test]
    fn assembles_along_the_first_dimension() {
        let a = [x(&[1, 2], &X1), k(&[1], &K1)];
        let b = [k(&[2], &K2), x(&[2, 2], &X2)]; // any order of inputs
        let got = assemble(&model(), &[&a, &b, &a], true).unwrap();
        assert_eq!(got.rows, [1, 2, 1]);
        assert_eq!(got.inputs[0].shape, [4, 2]);
        assert_eq!(got.inputs[0].parts, [&X1[..], &X2[..], &X1[..]]);
        assert_eq!(got.inputs[1].shape, [4]);
        assert_eq!(got.inputs[1].parts, [&K1[..], &K2[..], &K1[..]]);
    }

    #[test]
    fn refusals() {
        let wrong_type = InputTensor {
            datatype: Datatype::Fp64,
            ..x(&[1, 2], &X2)
        };
        let extra = InputTensor {
            name: "z",
            ..k(&[1], &K1)
        };
        let ok: &[InputTensor] = &[x(&[1, 2], &X1), k(&[1], &K1)];
        // (requests, code, words of the message)
        let table: Vec<(Vec<Vec<InputTensor>>, &str, &str)> = vec![
            (
                vec![vec![x(&[1, 2], &X1)]],
                "missing_input",
                "missing input 'k'",
            ),
            (
                vec![ok.to_vec(), vec![x(&[1, 2], &X1), k(&[1], &K1), extra]],
                "unknown_input",
                "request 1: input 'z' is not an input of the model; its inputs are x, k",
            ),
            (
                vec![vec![x(&[1, 2], &X1), k(&[1], &K1), k(&[1], &K1)]],
                "unknown_input",
                "input 'k' is given twice",
            ),
            (
                vec![vec![wrong_type, k(&[1], &K1)]],
                "wrong_datatype",
                "input 'x': datatype FP64, the model takes FP32",
            ),
            (
                vec![vec![x(&[2], &X1), k(&[1], &K1)]],
                "bad_shape",
                "input 'x' has shape [2] (rank 1) but the model takes [N, 2] (rank 2)",
            ),
            (
                vec![vec![x(&[1, 3], &X1), k(&[1], &K1)]],
                "bad_shape",
                "dimension 1 must be 2",
            ),
            (
                vec![vec![x(&[1, 2], &X2), k(&[1], &K1)]],
                "bad_data_size",
                "input 'x': 16 bytes of data, shape [1, 2] of FP32 needs 8",
            ),
            (
                vec![vec![x(&[0, 2], &[]), k(&[0], &[])]],
                "bad_shape",
                "the first (batch) dimension must be at least 1",
            ),
            (
                vec![vec![x(&[1, 2], &X1), k(&[2], &K2)]],
                "bad_shape",
                "input 'k' has 2 rows but input 'x' has 1",
            ),
            (
                vec![vec![x(&[usize::MAX, 2], &X1), k(&[1], &K1)]],
                "bad_shape",
                "too large",
            ),
        ];
        for (requests, code, words) in table {
            let requests: Vec<&[InputTensor]> = requests.iter().map(Vec::as_slice).collect();
            let err = assemble(&model(), &requests, true).unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(err.to_string().contains(words), "{err}");
        }
    }

    #[test]
    fn dynamic_dimensions_must_agree_among_requests() {
        let model = [spec("x", Datatype::Uint8, &[None, None])];
        let a = [InputTensor {
            name: "x",
            datatype: Datatype::Uint8,
            shape: &[1, 3],
            data: &[0; 3],
        }];
        let b = [InputTensor {
            shape: &[1, 4],
            data: &[0; 4],
            ..a[0]
        }];
        let err = assemble(&model, &[&a, &b], true).unwrap_err();
        assert_eq!(err.code(), "bad_shape");
        assert!(
            err.to_string()
                .contains("request 1: input 'x' has shape [1, 4] but request 0 has [1, 3]"),
            "{err}"
        );
        // unbatched, either alone passes as is
        assert_eq!(
            assemble(&model, &[&b], false).unwrap().inputs[0].shape,
            [1, 4]
        );
    }

    #[test]
    fn fixed_first_dimension_and_scalars() {
        let fixed = [spec("x", Datatype::Fp32, &[Some(1), Some(2)])];
        let one: &[InputTensor] = &[x(&[1, 2], &X1)];
        assert_eq!(
            assemble(&fixed, &[one], true).unwrap().inputs[0].shape,
            [1, 2]
        );
        let err = assemble(&fixed, &[one, one], true).unwrap_err();
        assert_eq!(err.code(), "bad_shape");
        assert!(
            err.to_string()
                .contains("fixed first dimension 1 ([1, 2]) but the batch has 2 rows"),
            "{err}"
        );

        let scalar = [spec("x", Datatype::Fp32, &[])];
        let s: &[InputTensor] = &[x(&[], &X1[..4])];
        assert_eq!(
            assemble(&scalar, &[s], true).unwrap_err().code(),
            "not_batched"
        );
        let err = assemble(&fixed, &[&[x(&[2, 2], &X2)]], false).unwrap_err();
        assert_eq!(err.code(), "bad_shape");
        assert!(err.to_string().contains("dimension 0 must be 1"), "{err}");
        let unbatched = assemble(&scalar, &[s], false).unwrap();
        assert_eq!(
            (unbatched.inputs[0].shape.len(), unbatched.rows.as_slice()),
            (0, &[1][..])
        );
    }

    #[test]
    fn splits_rows_by_request() {
        let data: Vec<u8> = (0..24).collect(); // 6 rows of 2 INT16
        let output = OutputTensor {
            datatype: Datatype::Int16,
            shape: vec![6, 2],
            data: Bytes::from(data),
        };
        let mut out = vec![Vec::new(); 3];
        split("y", output.clone(), &[1, 3, 2], &mut out).unwrap();
        let got: Vec<(Vec<usize>, Vec<u8>)> = out
            .iter()
            .map(|o| (o[0].shape.clone(), o[0].data.to_vec()))
            .collect();
        assert_eq!(
            got,
            [
                (vec![1, 2], (0..4).collect()),
                (vec![3, 2], (4..16).collect()),
                (vec![2, 2], (16..24).collect())
            ]
        );
        for (rows, shape) in [(&[1, 3][..], vec![6, 2]), (&[6][..], vec![])] {
            let output = OutputTensor {
                shape: shape.clone(),
                ..output.clone()
            };
            let err = split("y", output, rows, &mut out).unwrap_err();
            assert_eq!(err.code(), "not_batched");
            assert!(
                err.to_string()
                    .contains(&format!("output 'y' has shape {shape:?}")),
                "{err}"
            );
        }
    }
}
