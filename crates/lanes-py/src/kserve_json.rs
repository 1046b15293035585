//! A fast path for the `data` of `lanes serve`'s KServe v2 JSON inputs.
//!
//! orjson parses a request body; `np.asarray` on an input's `data` list then
//! infers the type of every element, which costs more than the parse.
//! [`pack_numbers`] reads a flat or rectangular nested list whose leaves are
//! all Python `float`s or `int`s (exact types, as orjson makes them; not
//! `bool`) straight into a little-endian float64 buffer (any float among
//! them; ints converted round-to-nearest-even, as numpy does) or int64 buffer
//! (all ints, each within int64), the array `np.asarray` would make. Anything
//! else (a bool, str, None, dict, an int past int64, ragged or empty nesting)
//! gives None and the caller keeps numpy's path, so its errors stay as they
//! are.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyFloat, PyInt, PyList, PyTuple};

/// Deepest nesting packed (numpy allows 64 dimensions).
const MAX_DIMS: usize = 32;

/// A leaf number.
#[derive(Clone, Copy)]
enum Leaf {
    Int(i64),
    Float(f64),
}

/// Collects the leaves of `list` row-major and checks its shape against
/// `shape[dim..]` (set by the first path down); false for anything not packed.
fn collect(
    list: &Bound<'_, PyList>,
    dim: usize,
    shape: &mut Vec<usize>,
    leaves: &mut Vec<Leaf>,
) -> PyResult<bool> {
    let len = list.len();
    if len == 0 || dim >= MAX_DIMS {
        return Ok(false);
    }
    if dim == shape.len() {
        if leaves.is_empty() {
            shape.push(len);
        } else {
            return Ok(false); // deeper here than the first path down
        }
    } else if shape[dim] != len {
        return Ok(false);
    }
    for item in list.iter() {
        if let Ok(inner) = item.downcast_exact::<PyList>() {
            if !collect(inner, dim + 1, shape, leaves)? {
                return Ok(false);
            }
            continue;
        }
        // A leaf: only at the depth of the first leaf.
        if dim + 1 != shape.len() {
            return Ok(false);
        }
        if let Ok(f) = item.downcast_exact::<PyFloat>() {
            leaves.push(Leaf::Float(f.value()));
        } else if item.is_exact_instance_of::<PyInt>() {
            match item.extract::<i64>() {
                Ok(v) => leaves.push(Leaf::Int(v)),
                Err(_) => return Ok(false),
            }
        } else {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `(bytes, "f8" | "i8", shape)`: the array `np.asarray(data)` makes of a
/// rectangular nested list of only floats and ints within int64; None for
/// anything else.
#[pyfunction]
fn pack_numbers<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyList>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let mut shape = Vec::new();
    let mut leaves = Vec::with_capacity(data.len());
    if !collect(data, 0, &mut shape, &mut leaves)? {
        return Ok(None);
    }
    let float = leaves.iter().any(|l| matches!(l, Leaf::Float(_)));
    let mut bytes = Vec::with_capacity(leaves.len() * 8);
    for leaf in &leaves {
        match (*leaf, float) {
            (Leaf::Int(v), true) => bytes.extend_from_slice(&(v as f64).to_le_bytes()),
            (Leaf::Int(v), false) => bytes.extend_from_slice(&v.to_le_bytes()),
            (Leaf::Float(v), _) => bytes.extend_from_slice(&v.to_le_bytes()),
        }
    }
    let kind = if float { "f8" } else { "i8" };
    let shape = PyTuple::new(py, shape)?;
    Ok(Some(PyTuple::new(
        py,
        [
            PyBytes::new(py, &bytes).into_any(),
            kind.into_pyobject(py)?.into_any(),
            shape.into_any(),
        ],
    )?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pack_numbers, m)?)?;
    Ok(())
}
