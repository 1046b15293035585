//! Flame graphs with inferno: folded stacks to an SVG, and `perf script`
//! text to folded stacks.
//!
//! Folded stacks are one line per distinct stack, `root;caller;leaf COUNT`.
//! inferno skips a line it cannot read with only a log warning, so the input
//! is checked here first and a bad line is a `ValueError` naming its number.
//! Both functions work without the GIL.

use inferno::collapse::perf::{Folder, Options as CollapseOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::{self, color::Palette, Options};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::{guarded, CoreError};

/// The longest excerpt of a bad line quoted in an error message.
const EXCERPT: usize = 80;

/// Renders folded stacks as an SVG flame graph (without the GIL).
#[pyfunction]
#[pyo3(signature = (folded, *, title, count_name = "samples", colors = "hot", reverse = false))]
fn flamegraph_svg(
    py: Python<'_>,
    folded: &str,
    title: &str,
    count_name: &str,
    colors: &str,
    reverse: bool,
) -> PyResult<String> {
    let palette: Palette = colors
        .parse()
        .map_err(|e: String| PyValueError::new_err(format!("colors: {e}")))?;
    let result = py.detach(|| {
        guarded(|| {
            Ok(check_folded(folded)
                .and_then(|()| render(folded, title, count_name, palette, reverse)))
        })
    });
    into_py(py, result)
}

/// Folds `perf script` output into stacks, one `frame;frame COUNT` line each
/// (inferno's collapse-perf; without the GIL).
#[pyfunction]
fn collapse_perf(py: Python<'_>, perf_script: &str) -> PyResult<String> {
    let result = py.detach(|| guarded(|| Ok(collapse(perf_script))));
    into_py(py, result)
}

/// `Ok(Err(message))` is a `ValueError`, `Err` (a panic) a `LanesError`.
fn into_py(py: Python<'_>, result: Result<Result<String, String>, CoreError>) -> PyResult<String> {
    match result {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(message)) => Err(PyValueError::new_err(message)),
        Err(e) => Err(e.into_py(py)),
    }
}

/// Checks every line the way inferno reads it: blank lines, `# ` comments and
/// bare counts (a sample with no frames) are skipped, every other line is a
/// stack, a space and a whole count; at least one count is above zero.
fn check_folded(folded: &str) -> Result<(), String> {
    let mut stacks = 0usize;
    let mut total = 0u64;
    for (index, raw) in folded.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("# ") {
            continue;
        }
        let number = index + 1;
        let Some((_stack, count)) = line.rsplit_once(char::is_whitespace) else {
            if line.bytes().all(|b| b.is_ascii_digit()) {
                // A count with no frames: py-spy writes these for samples taken while
                // no Python code ran. inferno skips them; so do we.
                continue;
            }
            return Err(bad_line(number, line, "no sample count after the stack"));
        };
        let count: u64 = count.parse().map_err(|_| {
            bad_line(
                number,
                line,
                &format!("sample count {count:?} is not a whole number"),
            )
        })?;
        stacks += 1;
        total = total.saturating_add(count);
    }
    if stacks == 0 {
        return Err(
            "folded stacks: no stacks in the input (expected \"frame;frame COUNT\" lines)".into(),
        );
    }
    if total == 0 {
        return Err(format!(
            "folded stacks: all {stacks} stacks have a count of 0"
        ));
    }
    Ok(())
}

fn bad_line(number: usize, line: &str, what: &str) -> String {
    let excerpt: String = line.chars().take(EXCERPT).collect();
    let more = if line.chars().count() > EXCERPT {
        "…"
    } else {
        ""
    };
    format!("folded stacks, line {number}: {what}: {excerpt:?}{more}")
}

fn render(
    folded: &str,
    title: &str,
    count_name: &str,
    palette: Palette,
    reverse: bool,
) -> Result<String, String> {
    let mut options = Options::default();
    options.title = title.to_string();
    options.count_name = count_name.to_string();
    options.colors = palette;
    // Colours from the frame names: the same input gives the same picture.
    options.hash = true;
    options.reverse_stack_order = reverse;
    let mut svg = Vec::with_capacity(folded.len() * 4 + 16 * 1024);
    flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
        .map_err(|e| format!("flame graph: {e}"))?;
    String::from_utf8(svg).map_err(|e| format!("flame graph: SVG is not UTF-8: {e}"))
}

fn collapse(perf_script: &str) -> Result<String, String> {
    if perf_script.trim().is_empty() {
        return Err("perf script: empty input".into());
    }
    let mut folder = Folder::from(CollapseOptions::default());
    let mut folded = Vec::new();
    folder
        .collapse(perf_script.as_bytes(), &mut folded)
        .map_err(|e| format!("perf script: {e}"))?;
    let folded = String::from_utf8(folded)
        .map_err(|e| format!("perf script: folded text is not UTF-8: {e}"))?;
    if folded.trim().is_empty() {
        return Err(
            "perf script: no stacks found (expected the text of `perf script` on a recording with samples)"
                .into(),
        );
    }
    Ok(folded)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flamegraph_svg, m)?)?;
    m.add_function(wrap_pyfunction!(collapse_perf, m)?)?;
    Ok(())
}
