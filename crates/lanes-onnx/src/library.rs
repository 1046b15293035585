//! Finding and loading the ONNX Runtime shared library, once per process.
//!
//! Nothing is downloaded or linked at build time (`ort`'s `load-dynamic`):
//! the library is opened when the first session is made. The location rule:
//!
//! 1. `ORT_DYLIB_PATH`, when set and not empty: that file (a relative path is
//!    taken from the current directory). A GPU host points it at the library
//!    of the `onnxruntime-gpu` wheel, which has the CUDA provider.
//! 2. Else the library the `onnxruntime` wheel ships in the project's virtual
//!    environment: walking up from `CARGO_MANIFEST_DIR` (set by cargo for
//!    tests, benches and `cargo run`), then from the current directory, every
//!    `.venv` met is looked in for
//!    `lib/python3.*/site-packages/onnxruntime/capi/libonnxruntime.so*` (or
//!    `.dylib`); the first found wins.
//! 3. Else [`OnnxError::LibraryNotFound`], naming both ways to fix it.
//!
//! [`Runtime::global`] applies the rule to this process's environment and
//! loads the library with its ONNX Runtime environment; the first load that
//! succeeds is kept for the life of the process (ONNX Runtime is process-wide),
//! a failed one is not, so a later call may try again. Any onnxruntime from
//! 1.17 on loads (the C API version `ort` is built against).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;

use crate::OnnxError;

/// The environment variable naming the library file (rule 1).
pub const DYLIB_ENV: &str = "ORT_DYLIB_PATH";

/// Where to look for the library: the inputs of the location rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LibrarySearch {
    /// The value of `ORT_DYLIB_PATH` (rule 1).
    pub dylib_path: Option<PathBuf>,
    /// The directories to walk up from, in order (rule 2).
    pub starts: Vec<PathBuf>,
}

impl LibrarySearch {
    /// The search this process's environment gives: `ORT_DYLIB_PATH`, then
    /// `CARGO_MANIFEST_DIR` and the current directory to walk up from.
    pub fn from_env() -> Self {
        let cwd = std::env::current_dir().ok();
        let dylib_path = std::env::var_os(DYLIB_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| absolute(PathBuf::from(v), cwd.as_deref()));
        let mut starts: Vec<PathBuf> = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        starts.extend(cwd.filter(|c| !starts.contains(c)));
        Self { dylib_path, starts }
    }

    /// The library file the location rule picks (see the module overview).
    pub fn locate(&self) -> Result<PathBuf, OnnxError> {
        if let Some(path) = &self.dylib_path {
            return if path.is_file() {
                Ok(path.clone())
            } else {
                Err(OnnxError::LibraryNotFound(format!(
                    "{DYLIB_ENV}={} is not a file: point it at libonnxruntime.so (the \
                     onnxruntime wheel's onnxruntime/capi/libonnxruntime.so.*, or \
                     onnxruntime-gpu's for CUDA)",
                    path.display()
                )))
            };
        }
        for start in &self.starts {
            for dir in start.ancestors() {
                let venv = dir.join(".venv");
                if let Some(found) = wheel_library(&venv) {
                    return Ok(found);
                }
            }
        }
        let starts: Vec<String> = self
            .starts
            .iter()
            .map(|s| s.display().to_string())
            .collect();
        Err(OnnxError::LibraryNotFound(format!(
            "no ONNX Runtime library: {DYLIB_ENV} is not set and no .venv above {} holds the \
             onnxruntime wheel (lib/python3.*/site-packages/onnxruntime/capi/libonnxruntime.so.*): \
             set {DYLIB_ENV} to the library, or make the project's .venv (make setup)",
            if starts.is_empty() {
                "(no directory)".to_owned()
            } else {
                starts.join(" or ")
            }
        )))
    }
}

fn absolute(path: PathBuf, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(cwd) if path.is_relative() => cwd.join(path),
        _ => path,
    }
}

/// The onnxruntime wheel's library in virtual environment `venv`, if any.
fn wheel_library(venv: &Path) -> Option<PathBuf> {
    let mut pythons: Vec<PathBuf> = fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| name_of(p).is_some_and(|n| n.starts_with("python3")))
        .collect();
    pythons.sort();
    pythons.into_iter().rev().find_map(|python| {
        let capi = python.join("site-packages/onnxruntime/capi");
        let mut libraries: Vec<PathBuf> = fs::read_dir(capi)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && name_of(p).is_some_and(is_library_name))
            .collect();
        libraries.sort();
        libraries.pop()
    })
}

fn name_of(path: &Path) -> Option<String> {
    path.file_name().map(OsString::from)?.into_string().ok()
}

/// `libonnxruntime.so`, `libonnxruntime.so.1.32.0`, `libonnxruntime.1.32.0.dylib`;
/// not the providers' libraries (`libonnxruntime_providers_*`).
fn is_library_name(name: String) -> bool {
    name.strip_prefix("libonnxruntime.")
        .is_some_and(|rest| rest.starts_with("so") || rest.ends_with("dylib"))
}

/// ONNX Runtime, loaded: the library and its environment, shared by every
/// session of the process.
#[derive(Debug)]
pub struct Runtime {
    environment: Environment,
    library: PathBuf,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static LOADING: Mutex<()> = Mutex::new(());

impl Runtime {
    /// The process's runtime, loaded first from [`LibrarySearch::from_env`].
    pub fn global() -> Result<&'static Runtime, OnnxError> {
        Self::init(&LibrarySearch::from_env())
    }

    /// The process's runtime, loaded first from what `search` locates. Once a
    /// load has succeeded, every call returns that runtime whatever `search`
    /// says; a failed load is not kept.
    pub fn init(search: &LibrarySearch) -> Result<&'static Runtime, OnnxError> {
        if let Some(runtime) = RUNTIME.get() {
            return Ok(runtime);
        }
        let _loading = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(runtime) = RUNTIME.get() {
            return Ok(runtime);
        }
        let library = search.locate()?;
        let load_error = |reason: String| OnnxError::LibraryLoad {
            path: library.clone(),
            reason,
        };
        let environment = ort::init_from(&library)
            .map_err(|e| load_error(e.to_string()))?
            .with_name("lanes")
            .build()
            .map_err(|e| load_error(e.to_string()))?;
        Ok(RUNTIME.get_or_init(|| Runtime {
            environment,
            library,
        }))
    }

    /// The library file loaded.
    pub fn library(&self) -> &Path {
        &self.library
    }

    /// Whether the library was built with the CUDA execution provider (it may
    /// still fail to start without a GPU or its CUDA libraries).
    pub fn has_cuda(&self) -> bool {
        use ort::ep::ExecutionProvider;
        ort::ep::CUDA::is_available().unwrap_or(false)
    }

    pub(crate) fn environment(&self) -> &Environment {
        &self.environment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake project: `root/.venv` with an onnxruntime wheel's files (empty).
    fn venv_with(root: &Path, files: &[&str]) {
        let capi = root.join(".venv/lib/python3.11/site-packages/onnxruntime/capi");
        fs::create_dir_all(&capi).unwrap();
        for f in files {
            fs::write(capi.join(f), b"").unwrap();
        }
    }

    #[test]
    fn location_rule() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let project = root.join("project");
        let crate_dir = project.join("crates/lanes-onnx");
        fs::create_dir_all(&crate_dir).unwrap();
        venv_with(
            &project,
            &[
                "libonnxruntime.so.1.32.0",
                "libonnxruntime_providers_shared.so",
                "__init__.py",
            ],
        );
        let elsewhere = root.join("elsewhere");
        venv_with(&elsewhere, &["libonnxruntime_providers_shared.so"]);
        let own = root.join("own.so");
        fs::write(&own, b"").unwrap();
        let wheel = project
            .join(".venv/lib/python3.11/site-packages/onnxruntime/capi/libonnxruntime.so.1.32.0");

        // (ORT_DYLIB_PATH, starts, the file found or the error's words)
        type Case<'a> = (Option<&'a Path>, Vec<PathBuf>, Result<&'a Path, &'a str>);
        let cases: [Case; 6] = [
            (Some(&own), vec![crate_dir.clone()], Ok(&own)),
            (
                Some(&root.join("gone.so")),
                vec![crate_dir.clone()],
                Err("gone.so is not a file"),
            ),
            (None, vec![crate_dir.clone()], Ok(&wheel)),
            // a .venv without the library is passed over; the next start is walked
            (None, vec![elsewhere.clone(), project.clone()], Ok(&wheel)),
            (
                None,
                vec![elsewhere.clone()],
                Err("ORT_DYLIB_PATH is not set and no .venv above"),
            ),
            (None, vec![], Err("(no directory)")),
        ];
        for (dylib, starts, want) in cases {
            let search = LibrarySearch {
                dylib_path: dylib.map(Path::to_path_buf),
                starts,
            };
            match (search.locate(), want) {
                (Ok(found), Ok(path)) => assert_eq!(found, path),
                (Err(e), Err(words)) => {
                    assert_eq!(e.code(), "onnxruntime_not_found");
                    let message = e.to_string();
                    assert!(message.contains(words), "{message}");
                    assert!(message.contains(DYLIB_ENV), "{message}");
                }
                (got, want) => panic!("{search:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn library_names() {
        let cases = [
            ("libonnxruntime.so", true),
            ("libonnxruntime.so.1.32.0", true),
            ("libonnxruntime.1.32.0.dylib", true),
            ("libonnxruntime_providers_shared.so", false),
            ("libonnxruntime_providers_cuda.so", false),
            ("onnxruntime_pybind11_state.so", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_library_name(name.to_owned()), want, "{name}");
        }
    }
}
