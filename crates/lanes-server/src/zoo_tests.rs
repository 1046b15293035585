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

/// A request of `n` raw gray images `h × w` (UINT8, JSON).
fn raw_request(n: usize, h: usize, w: usize) -> InferRequest {
    let data: Vec<String> = (0..n * h * w)
        .map(|i| ((i * 37) % 256).to_string())
        .collect();
    let json = format!(
        r#"{{"inputs":[{{"name":"image","shape":[{n},{h},{w}],"datatype":"UINT8","data":[{}]}}]}}"#,
        data.join(",")
    );
    lanes_kserve::rest::decode_request(
        lanes_kserve::ModelRef::default(),
        Bytes::from(json),
        None,
        &lanes_kserve::CodecConfig::default(),
    )
    .unwrap()
}

fn admitted(hooks: &ZooHooks, request: InferRequest) -> Admitted {
    let item = hooks.preprocess(&request).unwrap();
    Admitted {
        request,
        item: Some(item),
    }
}

fn labels(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("L{i}")).collect()
}

#[test]
fn collate_stacks_requests_in_order_and_split_gives_each_its_rows() {
    let hooks = zoo_hooks("cnn", Task::Char, labels(3));
    let batch = vec![
        admitted(&hooks, raw_request(2, 20, 10)),
        admitted(&hooks, raw_request(1, 32, 32)),
    ];
    let Stacked { x, shape, rows } = collate(batch).unwrap();
    assert_eq!(shape, [3, 1, CHAR_SIZE, CHAR_SIZE]);
    assert_eq!(rows, vec![2, 1]);
    assert_eq!(x.len(), 3 * CHAR_SIZE * CHAR_SIZE * 4);
    // Logits whose arg-max is the row's index: rows 0, 1 → the first
    // request, row 2 → the second.
    let mut logits = Vec::new();
    for row in 0..3 {
        for class in 0..3 {
            let v: f32 = if class == row { 5.0 } else { 0.0 };
            logits.extend_from_slice(&v.to_le_bytes());
        }
    }
    let parts = split_logits(&logits, &[3, 3], &rows).unwrap();
    let classes: Vec<Vec<u8>> = parts
        .into_iter()
        .map(|part| {
            let Produced::Item(item) = part else {
                panic!("an item for postprocess")
            };
            let out = hooks.postprocess(item).unwrap();
            let label = out.iter().find(|o| o.name == "label").unwrap();
            match label.tensor.data() {
                lanes_kserve::TensorData::Bytes(b) => b.iter().flat_map(|x| x.to_vec()).collect(),
                other => panic!("labels as bytes, got {other:?}"),
            }
        })
        .collect();
    assert_eq!(classes, vec![b"L0L1".to_vec(), b"L2".to_vec()]);
}

#[test]
fn split_refuses_logits_that_do_not_match_the_rows() {
    let four_floats = [0u8; 16];
    let err = split_logits(&four_floats, &[2, 2], &[1, 2]).unwrap_err();
    assert!(
        err.contains("shape [2, 2]") && err.contains("for 3 rows"),
        "{err}"
    );
    assert!(split_logits(&four_floats[..12], &[2, 2], &[2]).is_err());
}

#[test]
fn collate_refuses_an_unprocessed_request() {
    let request = raw_request(1, 4, 4);
    let err = collate(vec![Admitted {
        request,
        item: None,
    }])
    .unwrap_err();
    assert!(err.contains("unprocessed"), "{err}");
}
