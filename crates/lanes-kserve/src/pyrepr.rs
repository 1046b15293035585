//! Python's `repr` of JSON values, for error messages that must read exactly as
//! the Python codec's (`python/lanes/serving/codec.py` formats offending values
//! with `{value!r}` and lists with `{value}`).
//!
//! Rules: `null` is `None`, booleans `True`/`False`, integers in decimal,
//! floats as Python's shortest round-trip form (`8.0`, `1e+16`, `1e-05`),
//! strings single-quoted unless they hold a `'` and no `"`, with `\\`, the
//! quote, `\n`, `\r`, `\t` and other control characters escaped; arrays as
//! `[a, b]` and objects as `{'k': v}`.

use std::fmt::Write;

use serde_json::Value;

/// Python's `repr(value)` of a decoded JSON value.
pub(crate) fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, value);
    out
}

/// Python's `repr` of an optional value (`None` when absent).
pub(crate) fn repr_opt(value: Option<&Value>) -> String {
    value.map_or_else(|| "None".to_owned(), repr)
}

fn write_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => write!(out, "{i}").expect("write to String"),
            (None, Some(u), _) => write!(out, "{u}").expect("write to String"),
            (None, None, Some(f)) => out.push_str(&float(f)),
            (None, None, None) => write!(out, "{n}").expect("write to String"),
        },
        Value::String(s) => out.push_str(&string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&string(key));
                out.push_str(": ");
                write_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, positional for
/// decimal exponents -5 < e < 16, else scientific with a signed two-digit
/// exponent.
pub(crate) fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // `{:e}` is the shortest round-trip form: "-1.5e300", "8e0", "1e-5".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-5 < exp) && (exp < 16) {
        let point = exp + 1; // digits before the decimal point
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if (point as usize) >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let rest = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{rest}e{esign}{:02}", exp.abs())
    }
}

/// Python's `repr` of bytes decoded as UTF-8 with `surrogateescape` (how
/// aiohttp reads a header value): valid text as [`string`] writes it, each
/// byte of an invalid sequence as `\udcXX`.
pub(crate) fn surrogateescaped(raw: &[u8]) -> String {
    let mut text = String::new();
    let mut escapes = Vec::new(); // (position in text, byte)
    for chunk in raw.utf8_chunks() {
        text.push_str(chunk.valid());
        for &b in chunk.invalid() {
            escapes.push((text.len(), b));
            text.push('\u{fffd}'); // a placeholder, replaced below
        }
    }
    if escapes.is_empty() {
        return string(&text);
    }
    // Escape the valid runs between the invalid bytes, with the quote the whole
    // string takes, and write each invalid byte as its lone surrogate.
    let quoted = string(&text.replace('\u{fffd}', ""));
    let quote = quoted.chars().next().expect("a quote");
    let mut out = String::new();
    out.push(quote);
    let mut from = 0;
    for (at, b) in escapes {
        out.push_str(&escape_body(&text[from..at], quote));
        write!(out, "\\udc{b:02x}").expect("write to String");
        from = at + '\u{fffd}'.len_utf8();
    }
    out.push_str(&escape_body(&text[from..], quote));
    out.push(quote);
    out
}

/// [`string`] without its quotes, for a given quote character.
fn escape_body(s: &str, quote: char) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        escape_char(&mut out, c, quote);
    }
    out
}

/// Python's `repr(str)`.
pub fn string(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        escape_char(&mut out, c, quote);
    }
    out.push(quote);
    out
}

fn escape_char(out: &mut String, c: char, quote: char) {
    {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                write!(out, "\\x{:02x}", c as u32).expect("write to String")
            }
            c if ('\u{80}'..='\u{a0}').contains(&c) => {
                write!(out, "\\x{:02x}", c as u32).expect("write to String")
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reprs_read_as_python_writes_them() {
        let cases = [
            (json!(null), "None"),
            (json!(true), "True"),
            (json!(-8), "-8"),
            (json!(8.0), "8.0"),
            (json!(1.5), "1.5"),
            (json!(1e16), "1e+16"),
            (json!(1e15), "1000000000000000.0"),
            (json!(1e-5), "1e-05"),
            (json!(0.0001), "0.0001"),
            (json!(1.5e300), "1.5e+300"),
            (json!(-0.0), "-0.0"),
            (json!(123.456), "123.456"),
            (json!("FLOAT"), "'FLOAT'"),
            (json!("it's"), "\"it's\""),
            (json!("a\tb\\"), "'a\\tb\\\\'"),
            (json!([1.5, "2", true, null]), "[1.5, '2', True, None]"),
            (json!({"a": 1}), "{'a': 1}"),
        ];
        for (value, want) in cases {
            assert_eq!(repr(&value), want, "{value}");
        }
        assert_eq!(repr_opt(None), "None");
        assert_eq!(surrogateescaped(b"ab"), "'ab'");
        assert_eq!(
            surrogateescaped(b"\xffa'\xe2\x98\x83\n"),
            "\"\\udcffa'\u{2603}\\n\""
        );
    }
}
