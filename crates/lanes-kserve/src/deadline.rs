//! A request's timeout, from the `timeout` request parameter (µs) or else lanes'
//! `lanes-timeout-ms` HTTP header, as a duration the server adds to the
//! request's arrival (the clock is the server's, not read here). The rules and
//! messages are those of `_deadline` in `python/lanes/serving/app.py`.

use crate::error::KserveError;
use crate::pyrepr;
use crate::request::bad;

/// lanes' own HTTP header carrying a timeout in milliseconds.
pub const TIMEOUT_HEADER: &str = "lanes-timeout-ms";

/// The longest timeout a request can ask for, in ns (~31 years): a longer one
/// is cut to it, so a deadline always fits u64 nanoseconds.
pub const MAX_TIMEOUT_NS: u64 = 1_000_000_000_000_000_000;

/// The request's timeout in ns, None when it carries none (the model's default
/// applies). Rules: the `timeout` parameter (already an integer >= 0, see
/// [`InferRequest::timeout_us`](crate::InferRequest::timeout_us)) wins and
/// must be > 0; else the header is a plain decimal number ([`parse_decimal`]:
/// no `1_0`, `inf` or `nan`) and must be > 0; both are capped at
/// [`MAX_TIMEOUT_NS`].
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
    let ms = std::str::from_utf8(raw).ok().and_then(parse_decimal);
    let Some(ms) = ms.filter(|&ms| ms > 0.0) else {
        let shown = pyrepr::surrogateescaped(raw);
        return Err(bad(format!(
            "header {TIMEOUT_HEADER}: {shown}: must be milliseconds > 0"
        )));
    };
    // `as` saturates: inf and anything past the cap become the cap.
    Ok(Some(((ms * 1e6).min(MAX_TIMEOUT_NS as f64)) as u64))
}

/// A plain ASCII decimal number (`12`, `0.5`, `2e3`, `+.5`; surrounding
/// blanks allowed, at most 64 characters without them), or None for anything
/// else (`1_0`, `inf`, `nan`, `0x10`, non-ASCII digits): codec.py's
/// `parse_decimal`, `[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`.
pub fn parse_decimal(text: &str) -> Option<f64> {
    let s = text.trim();
    let b = s.as_bytes();
    if b.len() > 64 {
        return None;
    }
    let digits = |mut i: usize| {
        let from = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, i - from)
    };
    let mut i = usize::from(b.first() == Some(&b'+'));
    let (after, whole) = digits(i);
    i = after;
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        (i, fraction) = digits(i + 1);
    }
    if whole == 0 && fraction == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (after, exponent) = digits(i);
        if exponent == 0 {
            return None;
        }
        i = after;
    }
    if i != b.len() {
        return None;
    }
    s.parse().ok()
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
            (None, Some("1e3"), Some(1_000_000_000)),
            (None, Some(".5"), Some(500_000)),
            (None, Some("1e300"), Some(MAX_TIMEOUT_NS)),
        ];
        for (us, header, want) in ok {
            assert_eq!(
                timeout_ns(us, header.map(str::as_bytes)).unwrap(),
                want,
                "{us:?} {header:?}"
            );
        }
        let refused: [(Option<u64>, Option<&str>, &str); 8] = [
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
                Some("1_0"),
                "header lanes-timeout-ms: '1_0': must be milliseconds > 0",
            ),
            (
                None,
                Some("inf"),
                "header lanes-timeout-ms: 'inf': must be milliseconds > 0",
            ),
            (
                None,
                Some("\u{661}"),
                "header lanes-timeout-ms: '\u{661}': must be milliseconds > 0",
            ),
        ];
        for (us, header, message) in refused {
            let e = timeout_ns(us, header.map(str::as_bytes)).unwrap_err();
            assert_eq!((e.http_status(), e.to_string().as_str()), (400, message));
        }
    }
}
