//! Rounding a float number of nanoseconds to whole [`Nanos`].
//!
//! **Rule.** [`round_nanos`]`(x)` is exactly `x.round() as Nanos`: half away
//! from zero, NaN and negatives give 0, values past `Nanos::MAX` saturate.
//! It exists because `f64::round` is a library call on baseline x86-64 (no
//! SSE4.1 `roundsd`), and the simulator rounds several samples per request.
//!
//! How: `t = x as Nanos` truncates toward zero (saturating, NaN → 0). Below
//! 2^52 both `t` and `x − t` are exact, so `x − t ≥ 0.5` is the rounding
//! decision; from 2^52 on every float is an integer and `x − t` is 0 (or,
//! past `Nanos::MAX`, positive and the add saturates).

use crate::Nanos;

/// `x.round() as Nanos`, without the library call (see the module docs).
#[inline]
pub fn round_nanos(x: f64) -> Nanos {
    let t = x as Nanos;
    if x - t as f64 >= 0.5 {
        t.saturating_add(1)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_std_round_on_edges() {
        let two52 = (1u64 << 52) as f64;
        let cases = [
            0.0,
            -0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            -0.4,
            -0.5,
            -1.5,
            -1e300,
            two52 - 0.5,
            two52 - 1.5,
            two52 + 1.0,
            two52 * 2.0 + 2.0,
            2f64.powi(63),
            2f64.powi(64) - 2048.0, // the largest float below 2^64
            2f64.powi(64),
            1e30,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in cases {
            assert_eq!(round_nanos(x), x.round() as Nanos, "x = {x:e}");
        }
    }

    #[test]
    fn matches_std_round_on_a_sweep() {
        // Quarters around small integers, and pseudo-random bit patterns
        // (every exponent and sign).
        for i in -4000..4000 {
            let x = f64::from(i) / 4.0;
            assert_eq!(round_nanos(x), x.round() as Nanos, "x = {x}");
        }
        let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            bits = bits
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = f64::from_bits(bits);
            assert_eq!(round_nanos(x), x.round() as Nanos, "bits = {bits:#x}");
            // Also at the sampler's scale: positive, up to ~1e12.
            let y = (bits >> 11) as f64 / (1u64 << 53) as f64 * 1e12;
            assert_eq!(round_nanos(y), y.round() as Nanos, "y = {y}");
        }
    }
}
