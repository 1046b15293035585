//! The zoo's rules on small hand-made cases (the comparison with the
//! Python zoo on real images is tests/serving/test_zoo_native.py).

use super::*;

fn gray(width: usize, height: usize, px: Vec<f32>) -> Gray {
    Gray { width, height, px }
}

#[test]
fn ink_inverts_light_paper_and_keeps_dark() {
    // Light border: inverted.
    let light = ink(gray(
        3,
        3,
        vec![1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0],
    ));
    assert_eq!(light.px[4], 1.0);
    assert_eq!(light.px[0], 0.0);
    // Dark border: as it is.
    let dark = ink(gray(
        3,
        3,
        vec![0.0, 0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 0.0, 0.0],
    ));
    assert_eq!(dark.px[4], 0.8);
}

#[test]
fn a_glyph_is_centred_and_a_line_padded_right() {
    let glyph = fit(Task::Char, &gray(2, 4, vec![1.0; 8]));
    // 4 high → 32, 2 wide → 16, centred: columns 8..24.
    assert_eq!(glyph.len(), 32 * 32);
    assert_eq!(glyph[7], 0.0);
    assert!((glyph[8] - 1.0).abs() < 1e-6 && (glyph[23] - 1.0).abs() < 1e-6);
    assert_eq!(glyph[24], 0.0);
    let line = fit(Task::Line, &gray(8, 4, vec![1.0; 32]));
    // 4 high → 32, 8 wide → 64 of 128.
    assert!((line[63] - 1.0).abs() < 1e-6);
    assert_eq!(line[64], 0.0);
    // Python's round: half to even (2.5 → 2).
    assert_eq!(side(2.5, 32), 2);
    assert_eq!(side(3.5, 32), 4);
}

#[test]
fn softmax_and_ctc_follow_their_rules() {
    let (cls, p) = softmax_argmax(&[0.0, 2.0, 2.0]);
    assert_eq!(cls, 1, "the first on ties");
    let e = 1.0f32 / (2.0 + (-2.0f32).exp());
    assert!((p - e).abs() < 1e-6);
    let symbols: Vec<Bytes> = ["", "a", "b"].iter().map(|s| Bytes::from(*s)).collect();
    // a a _ a b b → aab
    let steps = [1, 1, 0, 1, 2, 2];
    let logits: Vec<f32> = steps
        .iter()
        .flat_map(|&k| (0..3).map(move |c| if c == k { 1.0 } else { 0.0 }))
        .collect();
    assert_eq!(ctc_greedy(&logits, 3, &symbols), b"aab");
}

#[test]
fn bad_images_are_refused_with_their_reason() {
    assert_eq!(decode_gray(b"").unwrap_err(), "image: empty (0 bytes)");
    assert!(decode_gray(b"hello")
        .unwrap_err()
        .contains("not a PNG or JPEG image"));
    let truncated = &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..];
    assert!(decode_gray(truncated)
        .unwrap_err()
        .contains("cannot decode"));
    let empty = Tensor::from_bytes_elements(vec![0], vec![]).unwrap();
    assert!(wire_images(&empty).unwrap_err().contains("BYTES shape [0]"));
    let ints = Tensor::from_values::<i32>(vec![1, 2, 2], &[0, 0, 0, 0]).unwrap();
    assert!(wire_images(&ints).unwrap_err().contains("datatype INT32"));
    let flat = Tensor::from_values::<u8>(vec![4], &[0; 4]).unwrap();
    assert!(wire_images(&flat)
        .unwrap_err()
        .contains("expected [n, H, W]"));
}

#[test]
fn raw_gray_levels_are_read_per_datatype() {
    let bytes = Tensor::from_values::<u8>(vec![1, 1, 2], &[0, 255]).unwrap();
    assert_eq!(wire_images(&bytes).unwrap()[0].px, [0.0, 1.0]);
    let floats = Tensor::from_values::<f32>(vec![1, 1, 1, 3], &[f32::NAN, 2.0, -1.0]).unwrap();
    assert_eq!(wire_images(&floats).unwrap()[0].px, [0.0, 1.0, 0.0]);
}
