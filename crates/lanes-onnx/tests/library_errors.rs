//! Loading ONNX Runtime from a wrong place fails with a coded error. A test
//! binary of its own: nothing here may load the real library, which would
//! then serve every later call of the process.

use std::path::PathBuf;

use lanes_onnx::{LibrarySearch, Runtime};

#[test]
fn a_missing_or_wrong_library_is_a_coded_error() {
    let tmp = tempfile::tempdir().unwrap();
    let not_a_library = tmp.path().join("libonnxruntime.so.1.32.0");
    std::fs::write(&not_a_library, b"not an ELF file").unwrap();
    // (ORT_DYLIB_PATH, starts, code, words of the message)
    let cases: [(Option<PathBuf>, Vec<PathBuf>, &str, &str); 3] = [
        (
            Some(tmp.path().join("absent.so")),
            vec![],
            "onnxruntime_not_found",
            "absent.so is not a file",
        ),
        (
            None,
            vec![tmp.path().to_path_buf()],
            "onnxruntime_not_found",
            "ORT_DYLIB_PATH is not set and no .venv above",
        ),
        (
            Some(not_a_library.clone()),
            vec![],
            "onnxruntime_load_failed",
            "cannot load ONNX Runtime from",
        ),
    ];
    for (dylib_path, starts, code, words) in cases {
        let search = LibrarySearch { dylib_path, starts };
        let err = Runtime::init(&search).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert!(err.to_string().contains(words), "{err}");
    }
}
