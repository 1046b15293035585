//! Codec tables: every message round-trips; every malformed body maps to its
//! error code; a worked example matches docs/arbiter-protocol.md byte for byte.

use super::*;

fn samples() -> Vec<Message> {
    vec![
        Message::Hello {
            version: 1,
            pid: 4242,
            service: "ocr".into(),
        },
        Message::Acquire(Acquire {
            id: 7,
            model: "line_rnn_zh".into(),
            batch: 8,
            cost_ns: 0,
            timeout_ns: 50_000_000,
            devices: vec![],
        }),
        Message::Acquire(Acquire {
            id: u64::MAX,
            model: "é".into(),
            batch: u32::MAX,
            cost_ns: 1,
            timeout_ns: 0,
            devices: vec![0, 1, 63],
        }),
        Message::Release {
            id: 7,
            run_ns: 1234,
        },
        Message::Cancel { id: 9 },
        Message::Stats,
        Message::Welcome {
            version: 1,
            session: 3,
            devices: vec!["cuda:0".into(), "cuda:1".into()],
        },
        Message::Welcome {
            version: 1,
            session: 0,
            devices: vec![],
        },
        Message::Grant {
            id: 7,
            device: 1,
            wait_ns: 999,
        },
        Message::Reject {
            id: 7,
            reason: RejectReason::Overload,
            message: "queue full".into(),
        },
        Message::Released { id: 7 },
        Message::StatsReply {
            json: "{\"clients\":1}".into(),
        },
        Message::Revoked { id: 5 },
        Message::Error {
            code: ErrorCode::OutOfOrder,
            message: String::new(),
        },
    ]
}

#[test]
fn every_message_round_trips() {
    let mut all = samples();
    all.extend(RejectReason::ALL.iter().map(|&reason| Message::Reject {
        id: 1,
        reason,
        message: reason.to_string(),
    }));
    all.extend(ErrorCode::ALL.iter().map(|&code| Message::Error {
        code,
        message: code.to_string(),
    }));
    for m in all {
        let mut body = Vec::new();
        encode(&m, &mut body);
        assert_eq!(decode(&body), Ok(m.clone()), "{m:?}");
        let mut frame = Vec::new();
        encode_frame(&m, &mut frame);
        let len = frame_len(frame[..4].try_into().unwrap()).unwrap();
        assert_eq!(len, body.len());
        assert_eq!(&frame[4..], &body[..]);
    }
}

#[test]
fn documented_example_bytes() {
    // docs/arbiter-protocol.md, "Example".
    let m = Message::Acquire(Acquire {
        id: 1,
        model: "resnet".into(),
        batch: 8,
        cost_ns: 0,
        timeout_ns: 50_000_000,
        devices: vec![1],
    });
    let mut frame = Vec::new();
    encode_frame(&m, &mut frame);
    let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "0000002902000000000000000100067265736e6574000000080000000000000000\
         0000000002faf08000010001"
    );
}

fn body(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn malformed_bodies_map_to_their_codes() {
    let hello_ok = body(&[
        &[1],
        &1u16.to_be_bytes(),
        &7u32.to_be_bytes(),
        &[0, 1, b'a'],
    ]);
    let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
        ("empty body", vec![], ErrorCode::Malformed),
        ("unknown type", vec![0x06], ErrorCode::UnknownType),
        (
            "unknown high type",
            vec![0xff, 1, 2],
            ErrorCode::UnknownType,
        ),
        ("short HELLO", vec![1, 0], ErrorCode::Malformed),
        (
            "HELLO trailing byte",
            [&hello_ok[..], &[0]].concat(),
            ErrorCode::Malformed,
        ),
        (
            "HELLO string past end",
            body(&[&[1, 0, 1, 0, 0, 0, 7], &[0, 9, b'a']]),
            ErrorCode::Malformed,
        ),
        (
            "HELLO bad UTF-8",
            body(&[&[1, 0, 1, 0, 0, 0, 7], &[0, 2, 0xc3, 0x28]]),
            ErrorCode::Malformed,
        ),
        ("STATS trailing", vec![5, 0], ErrorCode::Malformed),
        (
            "RELEASE short",
            vec![3, 0, 0, 0, 0, 0, 0, 0, 1],
            ErrorCode::Malformed,
        ),
        ("CANCEL short", vec![4, 1], ErrorCode::Malformed),
        (
            "ACQUIRE list longer than body",
            body(&[
                &[2],
                &1u64.to_be_bytes(),
                &[0, 1, b'm'],
                &1u32.to_be_bytes(),
                &[0; 16],
                &[0, 3, 0, 1],
            ]),
            ErrorCode::Malformed,
        ),
        (
            "REJECT unknown reason",
            body(&[&[0x83], &1u64.to_be_bytes(), &[0, 9, 0, 0]]),
            ErrorCode::Malformed,
        ),
        (
            "ERROR unknown code",
            vec![0x8f, 0, 0, 0, 0],
            ErrorCode::Malformed,
        ),
        (
            "STATS_REPLY length past end",
            vec![0x85, 0, 0, 0, 5, b'{'],
            ErrorCode::Malformed,
        ),
    ];
    for (name, bytes, code) in cases {
        let err = decode(&bytes).expect_err(name);
        assert_eq!(err.code(), code, "{name}: {err}");
        assert!(!err.to_string().contains('\n'), "{name}: one line");
    }
    assert!(decode(&hello_ok).is_ok());
}

#[test]
fn frame_lengths() {
    let cases: [(u32, Option<usize>); 5] = [
        (0, None),
        (1, Some(1)),
        (65536, Some(65536)),
        (65537, None),
        (u32::MAX, None),
    ];
    for (len, want) in cases {
        let got = frame_len(len.to_be_bytes());
        assert_eq!(got.as_ref().ok().copied(), want, "{len}");
        if let Err(e) = got {
            assert_eq!(e.code(), ErrorCode::TooLarge);
        }
    }
}

#[test]
fn encode_clips_long_strings_on_a_char_boundary() {
    let m = Message::Error {
        code: ErrorCode::Malformed,
        message: "é".repeat(40_000),
    };
    let mut b = Vec::new();
    encode(&m, &mut b);
    match decode(&b).unwrap() {
        Message::Error { message, .. } => assert_eq!(message.len(), 65534),
        other => panic!("{other:?}"),
    }
}

#[test]
fn codes_are_stable() {
    let reasons: Vec<(u16, &str)> = RejectReason::ALL
        .iter()
        .map(|r| (r.code(), r.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (1, "deadline"),
            (2, "overload"),
            (3, "no_such_device"),
            (4, "bad_request"),
            (5, "cancelled"),
            (6, "shutting_down")
        ]
    );
    let codes: Vec<(u16, &str)> = ErrorCode::ALL
        .iter()
        .map(|c| (c.code(), c.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            (1, "malformed"),
            (2, "too_large"),
            (3, "unsupported_version"),
            (4, "out_of_order"),
            (5, "unknown_type")
        ]
    );
}
