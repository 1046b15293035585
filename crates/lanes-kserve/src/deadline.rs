//! A request's timeout, from the `timeout` request parameter (µs) or else lanes'
//! `lanes-timeout-ms` HTTP header, as a duration the server adds to the
//! request's arrival (the clock is the server's, not read here). The rules and
//! messages are those of `_deadline` in `python/lanes/serving/app.py`.

use crate::error::KserveError;
use crate::pyrepr;
use crate::request::bad;

/// lanes' own HTTP header carrying a timeout in milliseconds.
pub const TIMEOUT_HEADER: &str = "lanes-timeout-ms";

/// The longest timeout a request can ask for, in ns (~31 years): a longer one,
/// `inf` included, is cut to it, so a deadline always fits u64 nanoseconds.
pub const MAX_TIMEOUT_NS: u64 = 1_000_000_000_000_000_000;

/// The request's timeout in ns, None when it carries none (the model's default
/// applies). Rules: the `timeout` parameter (already an integer >= 0, see
/// [`InferRequest::timeout_us`](crate::InferRequest::timeout_us)) wins and
/// must be > 0; else the header is a decimal float as Python's `float()`
/// reads it (surrounding whitespace, `_` between digits, `inf`) and must be
/// > 0 (not NaN); both are capped at [`MAX_TIMEOUT_NS`].
pub fn timeout_ns(
    timeout_us: Option<u64>,
    header: Option<&[u8]>,
) -> Result<Option<u64>, KserveError> {
    if let Some(us) = timeout_us {
        if us == 0 {
            return Err(bad("parameter timeout = 0: must be microseconds > 0"));
        }
        return Ok(Some(us.saturating_mul(1000).min(MAX_TIMEOUT_NS)));
    }
    let Some(raw) = header else { return Ok(None) };
    let ms = std::str::from_utf8(raw).ok().and_then(python_float);
    let Some(ms) = ms.filter(|&ms| ms > 0.0) else {
        let shown = pyrepr::surrogateescaped(raw);
        return Err(bad(format!(
            "header {TIMEOUT_HEADER}: {shown}: must be milliseconds > 0"
        )));
    };
    // `as` saturates: inf and anything past the cap become the cap.
    Ok(Some(((ms * 1e6).min(MAX_TIMEOUT_NS as f64)) as u64))
}

/// Python's `float(text)` for the forms a header can hold: trimmed, with `_`
/// allowed only between two digits.
fn python_float(text: &str) -> Option<f64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    let underscores_ok = bytes.iter().enumerate().all(|(i, &b)| {
        b != b'_'
            || (i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    if !underscores_ok {
        return None;
    }
    text.replace('_', "").parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_from_the_parameter_or_the_header() {
        let ok: [(Option<u64>, Option<&str>, Option<u64>); 9] = [
            (None, None, None),
            (Some(2500), None, Some(2_500_000)),
            (Some(2500), Some("soon"), Some(2_500_000)), // the parameter wins
            (Some(u64::MAX), None, Some(MAX_TIMEOUT_NS)),
            (None, Some("1.5"), Some(1_500_000)),
            (None, Some(" 20 "), Some(20_000_000)),
            (None, Some("1_000"), Some(1_000_000_000)),
            (None, Some("inf"), Some(MAX_TIMEOUT_NS)),
            (None, Some("1e300"), Some(MAX_TIMEOUT_NS)),
        ];
        for (us, header, want) in ok {
            assert_eq!(
                timeout_ns(us, header.map(str::as_bytes)).unwrap(),
                want,
                "{us:?} {header:?}"
            );
        }
        let refused: [(Option<u64>, Option<&str>, &str); 6] = [
            (
                Some(0),
                None,
                "parameter timeout = 0: must be microseconds > 0",
            ),
            (
                None,
                Some("soon"),
                "header lanes-timeout-ms: 'soon': must be milliseconds > 0",
            ),
            (
                None,
                Some("0"),
                "header lanes-timeout-ms: '0': must be milliseconds > 0",
            ),
            (
                None,
                Some("-3"),
                "header lanes-timeout-ms: '-3': must be milliseconds > 0",
            ),
            (
                None,
                Some("nan"),
                "header lanes-timeout-ms: 'nan': must be milliseconds > 0",
            ),
            (
                None,
                Some("1__0"),
                "header lanes-timeout-ms: '1__0': must be milliseconds > 0",
            ),
        ];
        for (us, header, message) in refused {
            let e = timeout_ns(us, header.map(str::as_bytes)).unwrap_err();
            assert_eq!((e.http_status(), e.to_string().as_str()), (400, message));
        }
    }
}
