//! A request tensor's JSON `data` (flat or nested, row-major) to a typed buffer,
//! with the Python codec's numpy semantics.
//!
//! Numeric datatypes: the nested arrays must be rectangular (equal lengths at
//! each level, arrays or scalars but not both at one level, at most 64 levels:
//! numpy's `asarray`), and hold exactly the shape's element count. The values
//! then take the kind numpy would give them: any null or object makes
//! "objects"; else any string "strings"; else any non-integer (or an integer
//! past 64 bits, read as a float) "floats"; else an integer above `i64::MAX`
//! makes "floats" beside other integers and "unsigned" beside only booleans;
//! else any integer "integers" (booleans count 0/1); else "booleans".
//! `BOOL` takes only booleans; an integer type takes only exact integers (not
//! booleans, not floats such as `1.0`) within its range; `FP16`/`FP32`/`FP64`
//! take integers, floats and booleans among them, and refuse a finite value
//! that overflows the type. Integers convert to floats directly, floats
//! through `f64`.
//! `BYTES` data are strings at any depth, stored as their UTF-8 bytes.

use bytes::Bytes;
use half::f16;
use serde_json::Value;

use crate::error::KserveError;
use crate::request::{bad, json_type, shape_list};
use crate::tensor::{Datatype, Element, Tensor, TensorData};

/// numpy's largest number of dimensions.
const NUMPY_MAX_DIMS: usize = 64;

/// The kind numpy gives a list of JSON scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    Uint,
    Float,
    Str,
    Object,
}

impl Kind {
    fn words(self) -> &'static str {
        match self {
            Self::Bool => "booleans",
            Self::Int | Self::Uint => "integers",
            Self::Float => "non-integer numbers",
            Self::Str => "strings",
            Self::Object => "null, objects or out-of-range numbers",
        }
    }
}

/// One input's tensor from its JSON `data`.
pub(crate) fn tensor_from_json(
    name: &str,
    datatype: Datatype,
    shape: Vec<u64>,
    data: &Value,
) -> Result<Tensor, KserveError> {
    let Value::Array(items) = data else {
        return Err(bad(format!(
            "input '{name}': 'data' must be a JSON array, got {}",
            json_type(data)
        )));
    };
    let count = crate::tensor::element_count(&shape).expect("checked shape");
    if datatype == Datatype::Bytes {
        let strings = json_strings(name, &shape, count, items)?;
        return Ok(Tensor::trusted(datatype, shape, TensorData::Bytes(strings)));
    }
    let leaves = rectangular_leaves(items).ok_or_else(|| {
        bad(format!(
            "input '{name}': 'data' must be a flat array or nested arrays of equal lengths"
        ))
    })?;
    if leaves.len() as u64 != count {
        return Err(bad(format!(
            "input '{name}': 'data' has {} elements; shape {} needs {count}",
            leaves.len(),
            shape_list(&shape)
        )));
    }
    let size = datatype.item_size().expect("fixed-size datatype");
    if count == 0 {
        return Ok(Tensor::trusted(
            datatype,
            shape,
            TensorData::Fixed(Bytes::new()),
        ));
    }
    let kind = kind_of(&leaves);
    let mut buf = Vec::with_capacity(leaves.len() * size);
    if datatype == Datatype::Bool {
        if kind != Kind::Bool {
            return Err(bad(format!(
                "input '{name}': BOOL data must be true or false, got {}",
                kind.words()
            )));
        }
        buf.extend(leaves.iter().map(|v| u8::from(v.as_bool() == Some(true))));
    } else if let Some((min, max)) = datatype.int_range() {
        let exact = match kind {
            Kind::Int | Kind::Uint => true,
            Kind::Float | Kind::Object => false,
            Kind::Bool | Kind::Str => {
                return Err(bad(format!(
                    "input '{name}': {datatype} data must be integers, got {}",
                    kind.words()
                )))
            }
        };
        let mut ints = Vec::with_capacity(leaves.len());
        for v in &leaves {
            let i = match v {
                Value::Bool(b) if exact => i128::from(*b),
                _ => crate::request::json_int(v).ok_or_else(|| {
                    bad(format!(
                        "input '{name}': {datatype} data must be integers, got {}",
                        kind.words()
                    ))
                })?,
            };
            ints.push(i);
        }
        if ints.iter().any(|&i| i < min || i > max) {
            return Err(bad(format!(
                "input '{name}': {datatype} data must be integers between {min} and {max}"
            )));
        }
        for i in ints {
            put_int(datatype, i, &mut buf);
        }
    } else {
        if !matches!(kind, Kind::Int | Kind::Uint | Kind::Float) {
            return Err(bad(format!(
                "input '{name}': {datatype} data must be numbers, got {}",
                kind.words()
            )));
        }
        for v in &leaves {
            let (value, direct) = match (kind, v) {
                (_, Value::Bool(b)) => (f64::from(u8::from(*b)), None),
                (Kind::Int, _) => (0.0, Some(v.as_i64().expect("an int64 kind"))),
                (_, _) => (v.as_f64().expect("a number"), None),
            };
            let finite = put_float(datatype, value, direct, &mut buf);
            if !finite {
                return Err(bad(format!(
                    "input '{name}': {datatype} data has a value out of the type's range"
                )));
            }
        }
    }
    Ok(Tensor::trusted(
        datatype,
        shape,
        TensorData::Fixed(buf.into()),
    ))
}

/// The scalars of rectangular nested arrays in row-major order, None when the
/// arrays are ragged, mix arrays and scalars at one level, or nest deeper than
/// numpy allows.
fn rectangular_leaves(data: &[Value]) -> Option<Vec<&Value>> {
    let mut level: Vec<&[Value]> = vec![data];
    for _ in 0..NUMPY_MAX_DIMS {
        let len = level[0].len();
        if level.iter().any(|l| l.len() != len) {
            return None;
        }
        let items: Vec<&Value> = level.iter().flat_map(|l| l.iter()).collect();
        let arrays = items.iter().filter(|v| v.is_array()).count();
        if arrays == 0 {
            return Some(items);
        }
        if arrays != items.len() {
            return None;
        }
        level = items
            .iter()
            .map(|v| v.as_array().expect("an array").as_slice())
            .collect();
    }
    None
}

fn kind_of(leaves: &[&Value]) -> Kind {
    let (mut object, mut string, mut float, mut int, mut uint) =
        (false, false, false, false, false);
    for v in leaves {
        match v {
            Value::Null | Value::Object(_) | Value::Array(_) => object = true,
            Value::String(_) => string = true,
            Value::Bool(_) => {}
            Value::Number(n) if n.is_i64() => int = true,
            Value::Number(n) if n.is_u64() => uint = true,
            Value::Number(_) => float = true,
        }
    }
    match () {
        _ if object => Kind::Object,
        _ if string => Kind::Str,
        _ if float || (uint && int) => Kind::Float,
        _ if uint => Kind::Uint,
        _ if int => Kind::Int,
        _ => Kind::Bool,
    }
}

fn put_int(datatype: Datatype, i: i128, buf: &mut Vec<u8>) {
    // The range was checked: each cast is exact.
    match datatype {
        Datatype::Uint8 => (i as u8).put_le(buf),
        Datatype::Uint16 => (i as u16).put_le(buf),
        Datatype::Uint32 => (i as u32).put_le(buf),
        Datatype::Uint64 => (i as u64).put_le(buf),
        Datatype::Int8 => (i as i8).put_le(buf),
        Datatype::Int16 => (i as i16).put_le(buf),
        Datatype::Int32 => (i as i32).put_le(buf),
        Datatype::Int64 => (i as i64).put_le(buf),
        _ => unreachable!("an integer datatype"),
    }
}

/// Appends `direct` (an int64, converted straight to the type as numpy casts
/// int64 arrays) or else `value`; false when a finite value became infinite.
fn put_float(datatype: Datatype, value: f64, direct: Option<i64>, buf: &mut Vec<u8>) -> bool {
    match datatype {
        Datatype::Fp16 => {
            let x = direct.map_or_else(|| f16::from_f64(value), |i| f16::from_f64(i as f64));
            x.put_le(buf);
            x.is_finite() || !value.is_finite()
        }
        Datatype::Fp32 => {
            let x = direct.map_or(value as f32, |i| i as f32);
            x.put_le(buf);
            x.is_finite() || !value.is_finite()
        }
        Datatype::Fp64 => {
            let x = direct.map_or(value, |i| i as f64);
            x.put_le(buf);
            true
        }
        _ => unreachable!("a float datatype"),
    }
}

/// The UTF-8 bytes of the strings of nested `data`, row-major. Rules, in the
/// order checked: every scalar is a string; at most `count` of them; exactly
/// `count`.
fn json_strings(
    name: &str,
    shape: &[u64],
    count: u64,
    data: &[Value],
) -> Result<Vec<Bytes>, KserveError> {
    let mut items: Vec<Bytes> = Vec::new();
    let mut stack = vec![data.iter()];
    while let Some(top) = stack.last_mut() {
        let Some(value) = top.next() else {
            stack.pop();
            continue;
        };
        match value {
            Value::Array(inner) => stack.push(inner.iter()),
            Value::String(s) => {
                if items.len() as u64 == count {
                    return Err(bad(format!(
                        "input '{name}': 'data' has more than the {count} elements of shape {}",
                        shape_list(shape)
                    )));
                }
                items.push(Bytes::copy_from_slice(s.as_bytes()));
            }
            other => {
                return Err(bad(format!(
                    "input '{name}': BYTES data must be strings, got {}",
                    json_type(other)
                )))
            }
        }
    }
    if items.len() as u64 != count {
        return Err(bad(format!(
            "input '{name}': 'data' has {} elements; shape {} needs {count}",
            items.len(),
            shape_list(shape)
        )));
    }
    Ok(items)
}
