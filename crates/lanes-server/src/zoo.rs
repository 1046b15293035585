//! The demo zoo natively: its pre- and post-processing in Rust around its
//! ONNX graph, so `lanes serve --demo` runs no Python per request. The rules
//! are those of `lanes.models.imaging` and `lanes.models.zoo.ZooModel`;
//! tests/serving/test_zoo_native.py checks the outputs against them.
//!
//! **Pre-processing** ([`ZooHooks::preprocess`]), per request, of the
//! `image` input — encoded images (`BYTES [n]`: PNG or JPEG) or raw gray
//! levels (`UINT8` 0–255 or `FP32`/`FP64` 0–1, `[n, H, W]` or `[n, 1, H, W]`):
//! 1. [`decode_gray`]: decode to 8-bit gray with Pillow's `L` luma
//!    (`(19595 R + 38470 G + 7471 B + 2^15) >> 16`), transparent pixels laid
//!    on white first; over [`MAX_PIXELS`] is refused before decoding.
//! 2. [`ink`]: gray in `[0, 1]` (a float image's NaN read as 0, values
//!    clipped), inverted when the median of the border pixels is `>= 0.5`,
//!    so strokes are high and the background 0 whatever the polarity.
//! 3. [`fit`]: a glyph is scaled (aspect kept, Python's round-half-even) so
//!    its longer side is 32 and centred on a 32×32 background; a line is
//!    scaled to height 32 and right-padded (or squeezed) to width 128. The
//!    resampling is the `image` crate's triangle (bilinear) filter, widened
//!    when shrinking (antialiased), as Pillow's `BILINEAR`.
//!
//! **Post-processing** ([`ZooHooks::postprocess`]) of the `logits`: a `char`
//! model answers `label` (`BYTES [n]`), `class` (`INT64 [n]`, the arg-max,
//! first on ties) and `score` (`FP32 [n]`, its softmax probability); a
//! `line` model answers `text` (`BYTES [n]`), CTC best path: the arg-max per
//! time step, runs collapsed, blanks (class 0) dropped.
//!
//! **The network elsewhere.** Where the graph cannot run natively (a zoo
//! model on `cuda:N` through PyTorch, the `torch` backend), the same hooks
//! run around a runner in another crate: [`collate`] stacks a batch's
//! pre-processed requests into one `[N, 1, h, w]` float32 input, and
//! [`split_logits`] cuts the network's logits back into one item per request
//! for [`ZooHooks::postprocess`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use image::imageops::FilterType;
use image::{ImageBuffer, Luma};
use lanes_kserve::{Datatype, InferRequest, OutputTensor, Tensor};
use lanes_onnx::InputTensor;

use crate::backend::BatchInfo;
use crate::onnx_backend::OnnxModel;
use crate::runner::{Admitted, HookError, Hooks, Item, ModelRunner, Produced};

/// The side of the square a glyph is fitted into.
pub const CHAR_SIZE: usize = 32;
/// The height every text line is brought to.
pub const LINE_HEIGHT: usize = 32;
/// The width every text line is brought to.
pub const W_FIXED: usize = 128;
/// The largest image (width × height) accepted.
pub const MAX_PIXELS: u64 = 4096 * 4096;
/// The wire input every zoo model takes.
pub const INPUT: &str = "image";
/// The graph's input and output.
const GRAPH_INPUT: &str = "x";

/// What a zoo model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// A square glyph → one class.
    Char,
    /// A text line → CTC text.
    Line,
}

impl Task {
    /// `char` or `line`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "char" => Some(Self::Char),
            "line" => Some(Self::Line),
            _ => None,
        }
    }

    /// The graph input's `(height, width)`.
    pub fn size(self) -> (usize, usize) {
        match self {
            Self::Char => (CHAR_SIZE, CHAR_SIZE),
            Self::Line => (LINE_HEIGHT, W_FIXED),
        }
    }
}

/// A gray image, row-major, values in `[0, 1]` (1 is white).
#[derive(Debug, Clone, PartialEq)]
pub struct Gray {
    pub width: usize,
    pub height: usize,
    pub px: Vec<f32>,
}

fn bad(message: String) -> HookError {
    HookError {
        status: 400,
        message,
    }
}

/// Decodes an encoded image to gray levels (step 1 of the module's rule).
pub fn decode_gray(data: &[u8]) -> Result<Gray, String> {
    if data.is_empty() {
        return Err("image: empty (0 bytes)".into());
    }
    let n = data.len();
    let reader = image::ImageReader::new(std::io::Cursor::new(data))
        .with_guessed_format()
        .map_err(|e| format!("image ({n} bytes): cannot read: {e}"))?;
    if reader.format().is_none() {
        return Err(format!("image ({n} bytes): not a PNG or JPEG image"));
    }
    let (w, h) = reader
        .into_dimensions()
        .map_err(|e| format!("image ({n} bytes): cannot decode: {e}"))?;
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(format!(
            "image {w}x{h}: too large; at most {MAX_PIXELS} pixels"
        ));
    }
    let decoded = image::load_from_memory(data)
        .map_err(|e| format!("image ({n} bytes): cannot decode: {e}"))?;
    let scale = (1.0f64 / 255.0) as f32;
    let px = if decoded.color().has_alpha() || decoded.color().has_color() {
        decoded
            .to_rgba8()
            .pixels()
            .map(|p| {
                let [r, g, b, a] = p.0.map(u32::from);
                // Over white paper (alpha_composite), then Pillow's L.
                let over = |c: u32| (c * a + 255 * (255 - a) + 127) / 255;
                let l = (over(r) * 19595 + over(g) * 38470 + over(b) * 7471 + 0x8000) >> 16;
                l as f32 * scale
            })
            .collect()
    } else {
        decoded
            .to_luma8()
            .pixels()
            .map(|p| f32::from(p.0[0]) * scale)
            .collect()
    };
    Ok(Gray {
        width: w as usize,
        height: h as usize,
        px,
    })
}

/// Gray levels → ink in `[0, 1]`, background 0 (step 2 of the module's rule).
pub fn ink(mut gray: Gray) -> Gray {
    let (w, h) = (gray.width, gray.height);
    let mut border: Vec<f32> = Vec::with_capacity(2 * (w + h));
    border.extend_from_slice(&gray.px[..w]);
    border.extend_from_slice(&gray.px[(h - 1) * w..]);
    border.extend((0..h).map(|y| gray.px[y * w]));
    border.extend((0..h).map(|y| gray.px[y * w + w - 1]));
    border.sort_unstable_by(f32::total_cmp);
    let mid = border.len() / 2;
    let median = if border.len() % 2 == 1 {
        border[mid]
    } else {
        (border[mid - 1] + border[mid]) / 2.0
    };
    if median >= 0.5 {
        for p in &mut gray.px {
            *p = 1.0 - *p;
        }
    }
    gray
}

/// `x` resized to `nw × nh` (triangle filter, antialiased when shrinking).
fn resample(x: &Gray, nw: usize, nh: usize) -> Vec<f32> {
    if (x.width, x.height) == (nw, nh) {
        return x.px.clone();
    }
    let buffer: ImageBuffer<Luma<f32>, Vec<f32>> =
        ImageBuffer::from_raw(x.width as u32, x.height as u32, x.px.clone())
            .expect("the pixels fill the image");
    image::imageops::resize(&buffer, nw as u32, nh as u32, FilterType::Triangle).into_raw()
}

/// Python's `round` (half to even), as a size of at least 1 and at most `cap`.
fn side(x: f64, cap: usize) -> usize {
    (x.round_ties_even() as usize).clamp(1, cap)
}

/// Ink fitted to the task's input (step 3 of the module's rule): `h × w` floats.
pub fn fit(task: Task, x: &Gray) -> Vec<f32> {
    let (h, w) = (x.height, x.width);
    match task {
        Task::Char => {
            let size = CHAR_SIZE;
            let scale = size as f64 / h.max(w) as f64;
            let (nh, nw) = (side(h as f64 * scale, size), side(w as f64 * scale, size));
            let small = resample(x, nw, nh);
            let mut out = vec![0.0f32; size * size];
            let (top, left) = ((size - nh) / 2, (size - nw) / 2);
            for y in 0..nh {
                let row = (top + y) * size + left;
                out[row..row + nw].copy_from_slice(&small[y * nw..(y + 1) * nw]);
            }
            out
        }
        Task::Line => {
            let nw = side((w * LINE_HEIGHT) as f64 / h as f64, W_FIXED);
            let small = resample(x, nw, LINE_HEIGHT);
            let mut out = vec![0.0f32; LINE_HEIGHT * W_FIXED];
            for y in 0..LINE_HEIGHT {
                out[y * W_FIXED..y * W_FIXED + nw].copy_from_slice(&small[y * nw..(y + 1) * nw]);
            }
            out
        }
    }
}

/// The images of an `image` input (see the module's rule for the forms).
pub fn wire_images(tensor: &Tensor) -> Result<Vec<Gray>, String> {
    let shape: Vec<u64> = tensor.shape().to_vec();
    if let Some(items) = tensor.bytes_elements() {
        if shape.len() != 1 || shape[0] == 0 {
            return Err(format!(
                "input '{INPUT}': BYTES shape {shape:?}: expected [n], n >= 1"
            ));
        }
        return items
            .iter()
            .enumerate()
            .map(|(i, b)| decode_gray(b).map_err(|e| format!("input '{INPUT}'[{i}]: {e}")))
            .collect();
    }
    let dims: Vec<usize> = match shape.as_slice() {
        [n, 1, h, w] | [n, h, w] => vec![*n as usize, *h as usize, *w as usize],
        _ => {
            return Err(format!(
                "input '{INPUT}': shape {shape:?}: expected [n, H, W] or [n, 1, H, W]"
            ))
        }
    };
    let (n, h, w) = (dims[0], dims[1], dims[2]);
    if n == 0 || h == 0 || w == 0 {
        return Err(format!(
            "input '{INPUT}': shape {shape:?}: expected [n, H, W] or [n, 1, H, W]"
        ));
    }
    if (h * w) as u64 > MAX_PIXELS {
        return Err(format!(
            "input '{INPUT}': shape {shape:?}: images over {MAX_PIXELS} px"
        ));
    }
    let scale = (1.0f64 / 255.0) as f32;
    let clip = |v: f32| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
    let values: Vec<f32> = match tensor.datatype() {
        Datatype::Uint8 => tensor
            .values::<u8>()
            .expect("UINT8")
            .into_iter()
            .map(|v| f32::from(v) * scale)
            .collect(),
        Datatype::Fp32 => tensor
            .values::<f32>()
            .expect("FP32")
            .into_iter()
            .map(clip)
            .collect(),
        Datatype::Fp64 => tensor
            .values::<f64>()
            .expect("FP64")
            .into_iter()
            .map(|v| clip(v as f32))
            .collect(),
        other => {
            return Err(format!(
                "input '{INPUT}': datatype {other}: expected BYTES (encoded images), UINT8 or FP32"
            ))
        }
    };
    Ok(values
        .chunks_exact(h * w)
        .map(|px| Gray {
            width: w,
            height: h,
            px: px.to_vec(),
        })
        .collect())
}

/// The index of the largest value, the first on ties.
fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}

/// The arg-max (first on ties) and its softmax probability.
pub fn softmax_argmax(row: &[f32]) -> (usize, f32) {
    let best = argmax(row);
    let top = row[best];
    let sum: f32 = row.iter().map(|&v| (v - top).exp()).sum();
    (best, 1.0 / sum)
}

/// CTC best path of `logits` (`steps × classes`): arg-max per step, runs
/// collapsed, blanks (class 0) dropped; the symbols joined.
pub fn ctc_greedy(logits: &[f32], classes: usize, symbols: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut last = usize::MAX;
    for step in logits.chunks_exact(classes) {
        let best = argmax(step);
        if best != 0 && best != last {
            out.extend_from_slice(symbols.get(best).map_or(&b""[..], |s| &s[..]));
        }
        last = best;
    }
    out
}

/// A zoo model's hooks: the module's pre- and post-processing.
#[derive(Debug)]
pub struct ZooHooks {
    pub name: String,
    pub task: Task,
    /// The symbol of every class.
    pub labels: Vec<Bytes>,
}

/// A request pre-processed: its graph input, `[n, 1, h, w]` float32 bytes.
struct Pre {
    shape: [usize; 4],
    x: Vec<u8>,
}

impl Hooks for ZooHooks {
    fn has_preprocess(&self) -> bool {
        true
    }

    fn preprocess(&self, request: &InferRequest) -> Result<Item, HookError> {
        let tensor = request.input(INPUT).ok_or_else(|| {
            bad(format!(
                "model '{}': needs input '{INPUT}' (got {})",
                self.name,
                request
                    .inputs
                    .iter()
                    .map(|t| format!("'{}'", t.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let images = wire_images(tensor).map_err(bad)?;
        let (h, w) = self.task.size();
        let mut x = Vec::with_capacity(images.len() * h * w * 4);
        for image in images {
            for v in fit(self.task, &ink(image)) {
                x.extend_from_slice(&v.to_le_bytes());
            }
        }
        let n = x.len() / (h * w * 4);
        Ok(Box::new(Pre {
            shape: [n, 1, h, w],
            x,
        }))
    }

    fn postprocess(&self, item: Item) -> Result<Vec<OutputTensor>, HookError> {
        let failed = |m: String| HookError {
            status: 500,
            message: format!("model '{}': {m}", self.name),
        };
        let logits = item
            .downcast::<lanes_onnx::OutputTensor>()
            .map_err(|_| failed("postprocess got no logits".into()))?;
        let values: Vec<f32> = logits
            .data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let shape = &logits.shape;
        let out = |name: &str, tensor: Result<Tensor, lanes_kserve::KserveError>| {
            tensor
                .map(|tensor| OutputTensor {
                    name: name.to_owned(),
                    tensor,
                })
                .map_err(|e| failed(e.to_string()))
        };
        match (self.task, shape.as_slice()) {
            (Task::Char, [n, c]) => {
                let (mut labels, mut classes, mut scores) = (vec![], vec![], vec![]);
                for row in values.chunks_exact(*c) {
                    let (cls, p) = softmax_argmax(row);
                    labels.push(self.labels.get(cls).cloned().unwrap_or_default());
                    classes.push(cls as i64);
                    scores.push(p);
                }
                let n = *n as u64;
                Ok(vec![
                    out("label", Tensor::from_bytes_elements(vec![n], labels))?,
                    out("class", Tensor::from_values(vec![n], &classes))?,
                    out("score", Tensor::from_values(vec![n], &scores))?,
                ])
            }
            (Task::Line, [n, t, c]) => {
                let texts = values
                    .chunks_exact(t * c)
                    .map(|seq| Bytes::from(ctc_greedy(seq, *c, &self.labels)))
                    .collect();
                Ok(vec![out(
                    "text",
                    Tensor::from_bytes_elements(vec![*n as u64], texts),
                )?])
            }
            (_, shape) => Err(failed(format!("logits of shape {shape:?}"))),
        }
    }
}

/// A zoo model's graph, run on what [`ZooHooks::preprocess`] made.
#[derive(Debug)]
pub struct ZooRunner {
    pub model: OnnxModel,
    pub task: Task,
}

impl ModelRunner for ZooRunner {
    /// As [`OnnxModel`] (the CPU provider only).
    fn inline(&self, device: usize) -> bool {
        self.model.inline(device)
    }

    fn run(&self, batch: &BatchInfo, inputs: Vec<Admitted>) -> Result<Vec<Produced>, String> {
        let pres: Vec<Box<Pre>> = inputs
            .into_iter()
            .map(|a| {
                a.item
                    .and_then(|i| i.downcast::<Pre>().ok())
                    .ok_or_else(|| "a request reached the zoo graph unprocessed".to_owned())
            })
            .collect::<Result<_, _>>()?;
        let views: Vec<[InputTensor<'_>; 1]> = pres
            .iter()
            .map(|p| {
                [InputTensor {
                    name: GRAPH_INPUT,
                    datatype: lanes_onnx::Datatype::Fp32,
                    shape: &p.shape,
                    data: &p.x,
                }]
            })
            .collect();
        let requests: Vec<&[InputTensor<'_>]> = views.iter().map(|v| &v[..]).collect();
        let (names, results) = self.model.run_inputs(batch.device, &requests)?;
        let at = names
            .iter()
            .position(|n| n == "logits")
            .ok_or("the graph has no output 'logits'")?;
        Ok(results
            .into_iter()
            .map(|mut outputs| Produced::Item(Box::new(outputs.swap_remove(at))))
            .collect())
    }

    /// A batch of `rows` zero images of the task's size.
    fn warm(&self, device: usize, rows: u32) -> Result<Option<Duration>, String> {
        let (h, w) = self.task.size();
        let shape = [rows.max(1) as usize, 1, h, w];
        let data = vec![0u8; shape.iter().product::<usize>() * 4];
        let input = [InputTensor {
            name: GRAPH_INPUT,
            datatype: lanes_onnx::Datatype::Fp32,
            shape: &shape,
            data: &data,
        }];
        let t0 = std::time::Instant::now();
        self.model.run_inputs(device, &[&input[..]])?;
        Ok(Some(t0.elapsed()))
    }
}

/// A batch's pre-processed requests stacked in their order.
#[derive(Debug)]
pub struct Stacked {
    /// The float32 little-endian bytes of one `[N, 1, h, w]` input.
    pub x: Vec<u8>,
    pub shape: [usize; 4],
    /// Each request's rows, in order (they sum to N).
    pub rows: Vec<usize>,
}

/// A batch's pre-processed requests stacked in their order (see [`Stacked`]).
pub fn collate(inputs: Vec<Admitted>) -> Result<Stacked, String> {
    let mut data = Vec::new();
    let mut rows = Vec::with_capacity(inputs.len());
    let mut shape = [0, 1, 0, 0];
    for admitted in inputs {
        let pre = admitted
            .item
            .and_then(|i| i.downcast::<Pre>().ok())
            .ok_or("a request reached the zoo network unprocessed")?;
        if shape[0] > 0 && pre.shape[2..] != shape[2..] {
            return Err(format!(
                "requests of sizes {:?} and {:?} in one batch",
                &shape[2..],
                &pre.shape[2..]
            ));
        }
        shape = [shape[0] + pre.shape[0], 1, pre.shape[2], pre.shape[3]];
        rows.push(pre.shape[0]);
        data.extend_from_slice(&pre.x);
    }
    Ok(Stacked {
        x: data,
        shape,
        rows,
    })
}

/// The logits of a batch (float32 bytes of `shape`, rows first) cut into
/// one item per request of `rows` rows each, for [`ZooHooks::postprocess`].
pub fn split_logits(data: &[u8], shape: &[usize], rows: &[usize]) -> Result<Vec<Produced>, String> {
    let total: usize = rows.iter().sum();
    let per_row = shape.iter().skip(1).product::<usize>() * 4;
    if shape.first() != Some(&total) || data.len() != total * per_row {
        return Err(format!(
            "the network answered logits of shape {shape:?} ({} bytes) for {total} rows",
            data.len()
        ));
    }
    let data = Bytes::copy_from_slice(data);
    let mut at = 0;
    Ok(rows
        .iter()
        .map(|&n| {
            let mut part = shape.to_vec();
            part[0] = n;
            let tensor = lanes_onnx::OutputTensor {
                datatype: lanes_onnx::Datatype::Fp32,
                shape: part,
                data: data.slice(at..at + n * per_row),
            };
            at += n * per_row;
            Produced::Item(Box::new(tensor))
        })
        .collect())
}

/// A zoo model's hooks alone, for a runner that is not [`ZooRunner`].
pub fn zoo_hooks(name: &str, task: Task, labels: Vec<String>) -> Arc<ZooHooks> {
    Arc::new(ZooHooks {
        name: name.to_owned(),
        task,
        labels: labels.into_iter().map(Bytes::from).collect(),
    })
}

/// The hooks and runner of a zoo model.
pub fn zoo(
    model: OnnxModel,
    name: &str,
    task: Task,
    labels: Vec<String>,
) -> (Arc<ZooRunner>, Arc<ZooHooks>) {
    (
        Arc::new(ZooRunner { model, task }),
        zoo_hooks(name, task, labels),
    )
}

#[cfg(test)]
#[path = "zoo_tests.rs"]
mod tests;
