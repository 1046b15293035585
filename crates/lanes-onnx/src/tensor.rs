//! Tensors in and out of a run, and their conversion to and from ONNX
//! Runtime values.
//!
//! [`InputTensor`] borrows a request's data (little-endian bytes, see
//! [`Datatype`]); [`OutputTensor`] owns its data as [`Bytes`], so the outputs
//! of a batch are copied out of ONNX Runtime once and every request's share is
//! a slice of that copy, not another copy.
//!
//! Copies into ONNX Runtime: an input made of one request's data is passed by
//! reference (no copy) when the bytes are aligned for the element type; else,
//! and whenever several requests' data are concatenated, the parts are copied
//! once into one buffer that ONNX Runtime then borrows. BOOL data must be
//! bytes 0 and 1 ([`OnnxError::BadData`] otherwise).

use std::fmt::Debug;

use bytemuck::{CheckedBitPattern, NoUninit, Pod};
use bytes::Bytes;
use half::f16;
use ort::session::SessionInputValue;
use ort::value::{DynValue, PrimitiveTensorElementType, Tensor, TensorRef};

use crate::{Datatype, OnnxError};

/// One input tensor of a request, borrowed: `data` holds the elements of
/// `shape` as `datatype`'s little-endian bytes, row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputTensor<'a> {
    pub name: &'a str,
    pub datatype: Datatype,
    pub shape: &'a [usize],
    pub data: &'a [u8],
}

/// One output tensor of a request: `data` holds the elements of `shape` as
/// `datatype`'s little-endian bytes, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputTensor {
    pub datatype: Datatype,
    pub shape: Vec<usize>,
    pub data: Bytes,
}

/// Calls `$f::<T>` with the Rust element type `T` of `$datatype`, for the
/// numeric types (every datatype but BOOL, which `$bool` handles).
macro_rules! numeric {
    ($datatype:expr, $f:ident ($($arg:expr),*), $bool:expr) => {
        match $datatype {
            Datatype::Bool => $bool,
            Datatype::Uint8 => $f::<u8>($($arg),*),
            Datatype::Uint16 => $f::<u16>($($arg),*),
            Datatype::Uint32 => $f::<u32>($($arg),*),
            Datatype::Uint64 => $f::<u64>($($arg),*),
            Datatype::Int8 => $f::<i8>($($arg),*),
            Datatype::Int16 => $f::<i16>($($arg),*),
            Datatype::Int32 => $f::<i32>($($arg),*),
            Datatype::Int64 => $f::<i64>($($arg),*),
            Datatype::Fp16 => $f::<f16>($($arg),*),
            Datatype::Fp32 => $f::<f32>($($arg),*),
            Datatype::Fp64 => $f::<f64>($($arg),*),
        }
    };
}

/// The ONNX Runtime value of input `name` made of `parts` (each request's
/// data, in order) with the assembled `shape`. The parts' lengths have been
/// checked against their shapes.
pub(crate) fn input_value<'a>(
    name: &str,
    datatype: Datatype,
    shape: Vec<usize>,
    parts: &[&'a [u8]],
) -> Result<SessionInputValue<'a>, OnnxError> {
    let value = numeric!(
        datatype,
        numeric_value(shape, parts),
        bool_value(name, shape, parts)?
    );
    value.map_err(|e| OnnxError::RunFailed(format!("input '{name}': {e}")))
}

fn numeric_value<'a, T: Pod + PrimitiveTensorElementType + Debug>(
    shape: Vec<usize>,
    parts: &[&'a [u8]],
) -> ort::Result<SessionInputValue<'a>> {
    if let [one] = parts {
        if let Ok(view) = bytemuck::try_cast_slice::<u8, T>(one) {
            return Ok(TensorRef::from_array_view((shape, view))?.into());
        }
    }
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut buffer: Vec<T> = vec![T::zeroed(); len / size_of::<T>()];
    let mut at = 0;
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut buffer);
    for part in parts {
        bytes[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    Ok(Tensor::from_array((shape, buffer))?.into())
}

fn bool_value<'a>(
    name: &str,
    shape: Vec<usize>,
    parts: &[&'a [u8]],
) -> Result<ort::Result<SessionInputValue<'a>>, OnnxError> {
    let check = |part: &'a [u8]| {
        bytemuck::checked::try_cast_slice::<u8, bool>(part).map_err(|_| {
            let at = part
                .iter()
                .position(|b| !bool::is_valid_bit_pattern(b))
                .unwrap_or(0);
            OnnxError::BadData(format!(
                "input '{name}': BOOL element {at} is byte {}, must be 0 or 1",
                part[at]
            ))
        })
    };
    if let [one] = parts {
        let view = check(one)?;
        return Ok(TensorRef::from_array_view((shape, view)).map(Into::into));
    }
    let mut buffer: Vec<bool> = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        buffer.extend_from_slice(check(part)?);
    }
    Ok(Tensor::from_array((shape, buffer)).map(Into::into))
}

/// The datatype, shape and data (one copy) of output `name`'s value.
pub(crate) fn output_data(
    name: &str,
    datatype: Datatype,
    value: &DynValue,
) -> Result<(Vec<usize>, Bytes), OnnxError> {
    numeric!(datatype, extract(value), extract::<bool>(value))
        .map_err(|e| OnnxError::RunFailed(format!("output '{name}': {e}")))
}

fn extract<T: NoUninit + PrimitiveTensorElementType>(
    value: &DynValue,
) -> ort::Result<(Vec<usize>, Bytes)> {
    let (shape, data) = value.try_extract_tensor::<T>()?;
    // ONNX Runtime's dimensions of a value it made are never negative.
    let shape = shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .collect();
    Ok((shape, Bytes::copy_from_slice(bytemuck::cast_slice(data))))
}
