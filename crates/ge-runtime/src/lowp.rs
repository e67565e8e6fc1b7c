//! The low-precision types (8-bit and 4-bit floats, 4- and 2-bit integers): their bit patterns
//! decoded and encoded, following ONNX's Cast (round to nearest even; `saturate` clamps an
//! out-of-range value to the largest finite one, otherwise it becomes infinity where the type
//! has one and NaN where it has not) and ml_dtypes' conversions, which ONNX's reference uses.
//!
//! The CPU backend holds one element a byte (the bit pattern in the low bits); IR tensors and
//! serialized data hold the sub-byte types packed, the first element in the lowest bits.

use es_core::DataType;

/// How FLOAT8_E8M0 (a power of two) is reached from a value between two: ONNX's `round_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum E8m0Round {
    Up,
    Down,
    Nearest,
}

impl E8m0Round {
    /// ONNX's names: "up", "down", "nearest".
    pub fn from_name(s: &str) -> Option<E8m0Round> {
        Some(match s {
            "up" => E8m0Round::Up,
            "down" => E8m0Round::Down,
            "nearest" => E8m0Round::Nearest,
            _ => return None,
        })
    }
}

/// How a value is converted to a low-precision type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CastMode {
    /// Out-of-range values (and infinities) become the largest finite value of their sign.
    pub saturate: bool,
    pub e8m0_round: E8m0Round,
}

impl Default for CastMode {
    /// ONNX's defaults: saturate, round FLOAT8_E8M0 up.
    fn default() -> Self {
        CastMode {
            saturate: true,
            e8m0_round: E8m0Round::Up,
        }
    }
}

/// What a float format does with its largest exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    /// IEEE-like: the all-ones exponent is infinity (mantissa 0) or NaN (FLOAT8_E5M2).
    Ieee,
    /// No infinity; only S.1111.111 is NaN (FLOAT8_E4M3FN).
    Fn,
    /// No infinity, no negative zero; 0x80 is the only NaN (the FNUZ types).
    Fnuz,
    /// Neither infinity nor NaN (FLOAT4_E2M1): NaN becomes -0, overflow saturates.
    Finite,
}

#[derive(Debug, Clone, Copy)]
struct Mini {
    ebits: u32,
    mbits: u32,
    bias: i32,
    special: Special,
}

fn mini(dt: DataType) -> Option<Mini> {
    let (ebits, mbits, bias, special) = match dt {
        DataType::FLOAT8_E4M3FN => (4, 3, 7, Special::Fn),
        DataType::FLOAT8_E4M3FNUZ => (4, 3, 8, Special::Fnuz),
        DataType::FLOAT8_E5M2 => (5, 2, 15, Special::Ieee),
        DataType::FLOAT8_E5M2FNUZ => (5, 2, 16, Special::Fnuz),
        DataType::FLOAT4_E2M1 => (2, 1, 1, Special::Finite),
        _ => return None,
    };
    Some(Mini {
        ebits,
        mbits,
        bias,
        special,
    })
}

impl Mini {
    fn emask(self) -> u32 {
        (1 << self.ebits) - 1
    }
    fn mmask(self) -> u32 {
        (1 << self.mbits) - 1
    }
    fn sign_bit(self) -> u32 {
        1 << (self.ebits + self.mbits)
    }
    /// The bits of the largest finite value.
    fn max_bits(self) -> u32 {
        let (e, m) = match self.special {
            Special::Ieee => (self.emask() - 1, self.mmask()),
            Special::Fn => (self.emask(), self.mmask() - 1),
            Special::Fnuz | Special::Finite => (self.emask(), self.mmask()),
        };
        (e << self.mbits) | m
    }
    fn nan_bits(self, negative: bool) -> u32 {
        let s = if negative { self.sign_bit() } else { 0 };
        match self.special {
            Special::Ieee => s | (self.emask() << self.mbits) | (1 << (self.mbits - 1)),
            Special::Fn => s | (self.emask() << self.mbits) | self.mmask(),
            Special::Fnuz => self.sign_bit(),
            Special::Finite => self.sign_bit(),
        }
    }

    fn decode(self, b: u32) -> f64 {
        let neg = b & self.sign_bit() != 0;
        let e = (b >> self.mbits) & self.emask();
        let m = b & self.mmask();
        match self.special {
            Special::Fnuz if b == self.sign_bit() => return f64::NAN,
            Special::Ieee if e == self.emask() => {
                let v = if m == 0 { f64::INFINITY } else { f64::NAN };
                return if neg { -v } else { v };
            }
            Special::Fn if e == self.emask() && m == self.mmask() => {
                return if neg { -f64::NAN } else { f64::NAN };
            }
            _ => {}
        }
        let mag = if e == 0 {
            f64::from(m) * pow2(1 - self.bias - self.mbits as i32)
        } else {
            f64::from((1 << self.mbits) | m) * pow2(e as i32 - self.bias - self.mbits as i32)
        };
        if neg {
            -mag
        } else {
            mag
        }
    }

    /// `x` rounded to the nearest value (ties to even).
    fn encode(self, x: f64, saturate: bool) -> u32 {
        if x.is_nan() {
            return self.nan_bits(x.is_sign_negative());
        }
        let neg = x.is_sign_negative();
        let s = if neg { self.sign_bit() } else { 0 };
        let overflow = || {
            if saturate || self.special == Special::Finite {
                s | self.max_bits()
            } else if self.special == Special::Ieee {
                s | (self.emask() << self.mbits)
            } else {
                self.nan_bits(neg)
            }
        };
        let a = x.abs();
        if a.is_infinite() {
            return overflow();
        }
        // The quantum at a's exponent (at least the subnormal one): a / q is exact in f64
        // (a power-of-two scaling), and rounding it to an integer is the one rounding.
        let min_e = 1 - self.bias;
        let e = if a == 0.0 {
            min_e
        } else {
            exponent(a).max(min_e)
        };
        let mut r = (a * pow2(self.mbits as i32 - e)).round_ties_even() as u32;
        let mut e = e;
        if r == 0 {
            // Zero: the FNUZ types have no negative zero.
            return if self.special == Special::Fnuz { 0 } else { s };
        }
        if r >= 2 << self.mbits {
            r >>= 1; // rounded up into the next binade (r was exactly 2^(mbits+1))
            e += 1;
        }
        let bits = if r < 1 << self.mbits {
            r // subnormal: exponent field 0
        } else {
            let field = e + self.bias;
            if field > self.emask() as i32 {
                return overflow();
            }
            ((field as u32) << self.mbits) | (r - (1 << self.mbits))
        };
        if bits > self.max_bits() {
            return overflow();
        }
        s | bits
    }
}

/// 2^k as f64 (k within f64's normal range).
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// floor(log2(a)) of a finite positive f64.
fn exponent(a: f64) -> i32 {
    let bits = a.to_bits();
    let e = ((bits >> 52) & 0x7FF) as i32;
    if e == 0 {
        // f64 subnormal: far below every low-precision type's range.
        -1075
    } else {
        e - 1023
    }
}

/// The 4- and 2-bit integers: (bits, signed).
fn small_int(dt: DataType) -> Option<(u32, bool)> {
    Some(match dt {
        DataType::INT4 => (4, true),
        DataType::UINT4 => (4, false),
        DataType::INT2 => (2, true),
        DataType::UINT2 => (2, false),
        _ => return None,
    })
}

/// Whether `dt` is one of the 4- and 2-bit integer types.
pub fn is_small_int(dt: DataType) -> bool {
    small_int(dt).is_some()
}

/// The integer a 4- or 2-bit integer's bit pattern holds; None for another type.
pub fn decode_int(dt: DataType, b: u8) -> Option<i64> {
    let (bits, signed) = small_int(dt)?;
    let sh = 8 - bits;
    Some(if signed {
        i64::from(((b << sh) as i8) >> sh)
    } else {
        i64::from(b & ((1 << bits) - 1) as u8)
    })
}

/// The value a low-precision bit pattern holds, as f64 (exact: every such value is an f64).
pub fn decode(dt: DataType, b: u8) -> f64 {
    if let Some(v) = decode_int(dt, b) {
        return v as f64;
    }
    if dt == DataType::FLOAT8_E8M0 {
        return if b == 0xFF {
            f64::NAN
        } else {
            pow2(i32::from(b) - 127)
        };
    }
    match mini(dt) {
        Some(f) => f.decode(u32::from(b)),
        None => f64::NAN,
    }
}

/// An integer's bit pattern in a 4- or 2-bit integer type: its low bits (wrap-around, as
/// numpy's integer casts); for the float types, the value converted.
pub fn encode_int(dt: DataType, v: i64, mode: CastMode) -> u8 {
    match small_int(dt) {
        Some((bits, _)) => (v as u8) & ((1u8 << bits) - 1),
        None => encode(dt, v as f64, mode),
    }
}

/// `x` converted to `dt`'s bit pattern: the float types round to nearest even (FLOAT8_E8M0 by
/// `mode.e8m0_round`); the integer types truncate toward zero and keep the low bits (NaN and
/// infinities give 0), as ml_dtypes' casts.
pub fn encode(dt: DataType, x: f64, mode: CastMode) -> u8 {
    if small_int(dt).is_some() {
        let t = if x.is_finite() { x.trunc() as i64 } else { 0 };
        return encode_int(dt, t, mode);
    }
    if dt == DataType::FLOAT8_E8M0 {
        return encode_e8m0(x as f32, mode);
    }
    match mini(dt) {
        Some(f) => f.encode(x, mode.saturate) as u8,
        None => 0,
    }
}

/// ONNX's `to_float8e8m0`: the f32's exponent field, rounded by the mode; the sign is dropped,
/// NaN and infinities give 0xFF (NaN); without saturation the largest exponent may round up
/// into NaN.
fn encode_e8m0(x: f32, mode: CastMode) -> u8 {
    let f = x.to_bits();
    let exp = ((f >> 23) & 0xFF) as u16;
    if exp == 0xFF {
        return 0xFF;
    }
    let up = match mode.e8m0_round {
        E8m0Round::Down => false,
        E8m0Round::Up => f & 0x7F_FFFF != 0,
        E8m0Round::Nearest => {
            let g = f & 0x40_0000 != 0;
            let r = f & 0x20_0000 != 0;
            let s = f & 0x1F_FFFF != 0;
            g && (r || s || exp > 0)
        }
    };
    let up = up && !(mode.saturate && exp == 0xFE);
    (exp + u16::from(up)) as u8
}

/// The bits of one element in storage: 8, 4 or 2.
pub fn elem_bits(dt: DataType) -> usize {
    dt.bits().unwrap_or(8)
}

/// Packs one-pattern-a-byte elements into `dt`'s storage (sub-byte types: the first element in
/// the lowest bits, the last byte padded with zeros).
pub fn pack(dt: DataType, elems: impl ExactSizeIterator<Item = u8>) -> Vec<u8> {
    let bits = elem_bits(dt);
    if bits >= 8 {
        return elems.collect();
    }
    let per = 8 / bits;
    let mask = ((1u16 << bits) - 1) as u8;
    let mut out = vec![0u8; elems.len().div_ceil(per)];
    for (i, b) in elems.enumerate() {
        out[i / per] |= (b & mask) << ((i % per) * bits);
    }
    out
}

/// `n` elements of `dt` from packed storage, one pattern a byte; None when `data` is not the
/// size `n` elements take.
pub fn unpack(dt: DataType, n: usize, data: &[u8]) -> Option<Vec<u8>> {
    if dt.bytes_for(n) != Some(data.len()) {
        return None;
    }
    let bits = elem_bits(dt);
    if bits >= 8 {
        return Some(data.to_vec());
    }
    let per = 8 / bits;
    let mask = ((1u16 << bits) - 1) as u8;
    Some(
        (0..n)
            .map(|i| (data[i / per] >> ((i % per) * bits)) & mask)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    const FLOATS: [DataType; 5] = [
        FLOAT8_E4M3FN,
        FLOAT8_E4M3FNUZ,
        FLOAT8_E5M2,
        FLOAT8_E5M2FNUZ,
        FLOAT4_E2M1,
    ];

    fn sat() -> CastMode {
        CastMode::default()
    }
    fn nosat() -> CastMode {
        CastMode {
            saturate: false,
            ..CastMode::default()
        }
    }
    fn patterns(dt: DataType) -> u32 {
        1 << elem_bits(dt)
    }

    /// The spec's value of a pattern, written out independently of [`Mini::decode`]:
    /// (-1)^s * 2^(e - bias) * (1 + m / 2^mbits), or the subnormal 2^(1 - bias) * m / 2^mbits.
    fn spec_value(dt: DataType, b: u32) -> f64 {
        let (e_bits, m_bits, bias) = match dt {
            FLOAT8_E4M3FN => (4, 3, 7),
            FLOAT8_E4M3FNUZ => (4, 3, 8),
            FLOAT8_E5M2 => (5, 2, 15),
            FLOAT8_E5M2FNUZ => (5, 2, 16),
            _ => (2, 1, 1),
        };
        let s = (b >> (e_bits + m_bits)) & 1;
        let e = ((b >> m_bits) & ((1 << e_bits) - 1)) as i32;
        let m = f64::from(b & ((1 << m_bits) - 1));
        let frac = m / f64::from(1u32 << m_bits);
        let mag = if e == 0 {
            2f64.powi(1 - bias) * frac
        } else {
            2f64.powi(e - bias) * (1.0 + frac)
        };
        if s == 1 {
            -mag
        } else {
            mag
        }
    }

    fn is_nan_pattern(dt: DataType, b: u32) -> bool {
        match dt {
            FLOAT8_E4M3FN => b & 0x7F == 0x7F,
            FLOAT8_E5M2 => b & 0x7C == 0x7C && b & 3 != 0,
            FLOAT8_E4M3FNUZ | FLOAT8_E5M2FNUZ => b == 0x80,
            _ => false,
        }
    }

    #[test]
    fn every_pattern_decodes_to_the_spec_value() {
        for dt in FLOATS {
            for b in 0..patterns(dt) {
                let v = decode(dt, b as u8);
                if is_nan_pattern(dt, b) {
                    assert!(v.is_nan(), "{dt} {b:#x}");
                } else if dt == FLOAT8_E5M2 && b & 0x7F == 0x7C {
                    assert_eq!(v, if b & 0x80 != 0 { -1.0 } else { 1.0 } * f64::INFINITY);
                } else {
                    assert_eq!(v.to_bits(), spec_value(dt, b).to_bits(), "{dt} {b:#x}");
                }
            }
        }
        // Known values: the largest finite ones and the smallest subnormals.
        assert_eq!(decode(FLOAT8_E4M3FN, 0x7E), 448.0);
        assert_eq!(decode(FLOAT8_E4M3FNUZ, 0x7F), 240.0);
        assert_eq!(decode(FLOAT8_E5M2, 0x7B), 57344.0);
        assert_eq!(decode(FLOAT8_E5M2FNUZ, 0x7F), 57344.0);
        assert_eq!(decode(FLOAT4_E2M1, 0x7), 6.0);
        assert_eq!(decode(FLOAT8_E4M3FN, 0x01), 2f64.powi(-9));
        assert_eq!(decode(FLOAT8_E5M2FNUZ, 0x01), 2f64.powi(-17));
        assert_eq!(decode(FLOAT8_E4M3FNUZ, 0x00).to_bits(), 0);
    }

    #[test]
    fn every_finite_pattern_round_trips() {
        for dt in FLOATS {
            for b in 0..patterns(dt) {
                let v = decode(dt, b as u8);
                if v.is_nan() || v.is_infinite() {
                    continue;
                }
                for mode in [sat(), nosat()] {
                    let back = u32::from(encode(dt, v, mode));
                    assert_eq!(back, b, "{dt} {b:#x} ({v})");
                }
            }
        }
    }

    /// Between two neighbouring finite values: below the midpoint rounds down, above it up, at
    /// it to the even pattern.
    #[test]
    fn midpoints_round_to_even() {
        for dt in FLOATS {
            let mut vals: Vec<(f64, u32)> = (0..patterns(dt))
                .map(|b| (decode(dt, b as u8), b))
                .filter(|(v, _)| v.is_finite() && *v >= 0.0 && v.to_bits() != (-0.0f64).to_bits())
                .collect();
            vals.sort_by(|a, b| a.0.total_cmp(&b.0));
            vals.dedup_by(|a, b| a.0 == b.0);
            for w in vals.windows(2) {
                let ((lo, lb), (hi, hb)) = (w[0], w[1]);
                let mid = (lo + hi) / 2.0;
                let even = if lb % 2 == 0 { lb } else { hb };
                let below = mid - (hi - lo) / 8.0;
                let above = mid + (hi - lo) / 8.0;
                for (x, want) in [(mid, even), (below, lb), (above, hb)] {
                    assert_eq!(u32::from(encode(dt, x, sat())), want, "{dt} {x}");
                    let neg = u32::from(encode(dt, -x, sat()));
                    let want_neg = if matches!(dt, FLOAT8_E4M3FNUZ | FLOAT8_E5M2FNUZ) && want == 0 {
                        0
                    } else {
                        want | (1 << (elem_bits(dt) - 1))
                    };
                    assert_eq!(neg, want_neg, "{dt} {}", -x);
                }
            }
        }
    }

    #[test]
    fn saturation_infinities_and_nan() {
        let big = [1e6, f64::INFINITY];
        for x in big {
            // saturate=1: the largest finite value of the sign.
            assert_eq!(encode(FLOAT8_E4M3FN, x, sat()), 0x7E);
            assert_eq!(encode(FLOAT8_E4M3FN, -x, sat()), 0xFE);
            assert_eq!(encode(FLOAT8_E4M3FNUZ, x, sat()), 0x7F);
            assert_eq!(encode(FLOAT8_E5M2, -x, sat()), 0xFB);
            assert_eq!(encode(FLOAT8_E5M2FNUZ, x, sat()), 0x7F);
            // saturate=0: infinity where the type has one, NaN where not.
            assert_eq!(encode(FLOAT8_E4M3FN, x, nosat()), 0x7F);
            assert_eq!(encode(FLOAT8_E4M3FN, -x, nosat()), 0xFF);
            assert_eq!(encode(FLOAT8_E4M3FNUZ, -x, nosat()), 0x80);
            assert_eq!(encode(FLOAT8_E5M2, x, nosat()), 0x7C);
            assert_eq!(encode(FLOAT8_E5M2, -x, nosat()), 0xFC);
            assert_eq!(encode(FLOAT8_E5M2FNUZ, x, nosat()), 0x80);
            // FLOAT4_E2M1 has neither: it always saturates.
            assert_eq!(encode(FLOAT4_E2M1, x, nosat()), 0x7);
            assert_eq!(encode(FLOAT4_E2M1, -x, sat()), 0xF);
        }
        // 464 is the midpoint of 448 and (the missing) 480: to even, 448; above it, NaN.
        assert_eq!(encode(FLOAT8_E4M3FN, 464.0, nosat()), 0x7E);
        assert_eq!(encode(FLOAT8_E4M3FN, 465.0, nosat()), 0x7F);
        // 61440 is the midpoint of 57344 (mantissa 11, odd) and 65536: to even, infinity.
        assert_eq!(encode(FLOAT8_E5M2, 61440.0, nosat()), 0x7C);
        assert_eq!(encode(FLOAT8_E5M2, 61439.0, nosat()), 0x7B);
        assert_eq!(encode(FLOAT8_E4M3FNUZ, 248.0, nosat()), 0x80);
        assert_eq!(encode(FLOAT8_E4M3FNUZ, 247.9, nosat()), 0x7F);
        // NaN keeps its sign where the type can; FNUZ has one NaN; E2M1 gives -0 (ml_dtypes).
        assert_eq!(encode(FLOAT8_E4M3FN, f64::NAN, sat()), 0x7F);
        assert_eq!(encode(FLOAT8_E4M3FN, -f64::NAN, sat()), 0xFF);
        assert_eq!(encode(FLOAT8_E5M2, f64::NAN, sat()), 0x7E);
        assert_eq!(encode(FLOAT8_E5M2FNUZ, f64::NAN, sat()), 0x80);
        assert_eq!(encode(FLOAT4_E2M1, f64::NAN, sat()), 0x8);
        // Zeros and underflow: FNUZ has no negative zero.
        assert_eq!(encode(FLOAT8_E4M3FN, -0.0, sat()), 0x80);
        assert_eq!(encode(FLOAT8_E4M3FNUZ, -0.0, sat()), 0x00);
        assert_eq!(encode(FLOAT8_E5M2FNUZ, -1e-7, nosat()), 0x00);
        assert_eq!(encode(FLOAT8_E5M2, -1e-9, nosat()), 0x80);
    }

    #[test]
    fn e8m0_follows_onnx_rounding() {
        let up = sat();
        let down = CastMode {
            e8m0_round: E8m0Round::Down,
            ..sat()
        };
        let near = CastMode {
            e8m0_round: E8m0Round::Nearest,
            ..sat()
        };
        // ONNX's test: [0, 0.124, 0.25, 0.5, 1.1, 2, 4, 8] rounded up.
        let xs = [0.0, 0.124, 0.25, 0.5, 1.1, 2.0, 4.0, 8.0];
        let want = [0u8, 124, 125, 126, 128, 128, 129, 130];
        for (x, w) in xs.iter().zip(want) {
            assert_eq!(encode(FLOAT8_E8M0, *x, up), w, "{x}");
        }
        assert_eq!(encode(FLOAT8_E8M0, 1.1, down), 127);
        assert_eq!(encode(FLOAT8_E8M0, 1.4, near), 127);
        assert_eq!(encode(FLOAT8_E8M0, 1.6, near), 128);
        assert_eq!(encode(FLOAT8_E8M0, -2.0, up), 128, "the sign is dropped");
        assert_eq!(encode(FLOAT8_E8M0, f64::INFINITY, up), 0xFF);
        assert_eq!(encode(FLOAT8_E8M0, f64::NAN, up), 0xFF);
        assert_eq!(encode(FLOAT8_E8M0, 2f64.powi(-127), up), 1);
        // The largest exponent: saturated it stays, otherwise rounding up makes NaN.
        let x = f64::from(f32::MAX);
        assert_eq!(encode(FLOAT8_E8M0, x, up), 0xFE);
        assert_eq!(
            encode(
                FLOAT8_E8M0,
                x,
                CastMode {
                    saturate: false,
                    ..up
                }
            ),
            0xFF
        );
        // Every pattern: 2^(b - 127), 0xFF NaN; a power of two encodes back to itself.
        for b in 0..=255u8 {
            let v = decode(FLOAT8_E8M0, b);
            if b == 0xFF {
                assert!(v.is_nan());
                continue;
            }
            assert_eq!(v, 2f64.powi(i32::from(b) - 127));
            // ONNX's algorithm reads the f32 bits: 2^-127 is an f32 subnormal (exponent field 0,
            // a fraction), which rounding up takes to 2^-126.
            let modes: &[CastMode] = if b == 0 {
                &[down, near]
            } else {
                &[up, down, near]
            };
            for &mode in modes {
                assert_eq!(encode(FLOAT8_E8M0, v, mode), b, "{b}");
            }
        }
    }

    #[test]
    fn small_integers_wrap_and_truncate() {
        for (dt, lo, hi) in [(INT4, -8, 7), (UINT4, 0, 15), (INT2, -2, 1), (UINT2, 0, 3)] {
            // Every pattern decodes into the type's range and encodes back.
            let mut seen = Vec::new();
            for b in 0..patterns(dt) as u8 {
                let v = decode_int(dt, b).unwrap();
                assert!((lo..=hi).contains(&v), "{dt} {b}");
                assert_eq!(encode_int(dt, v, sat()), b);
                assert_eq!(decode(dt, b), v as f64);
                seen.push(v);
            }
            seen.sort();
            assert_eq!(seen, (lo..=hi).collect::<Vec<_>>());
            // Outside the range: the low bits (ONNX's test: -9 -> 7 and 8 -> -8 for INT4).
            for v in -40i64..40 {
                let b = encode_int(dt, v, sat());
                let back = decode_int(dt, b).unwrap();
                assert_eq!((back - v).rem_euclid(hi - lo + 1), 0, "{dt} {v}");
            }
        }
        assert_eq!(decode_int(INT4, encode(INT4, -9.0, sat())), Some(7));
        assert_eq!(decode_int(INT4, encode(INT4, 8.0, sat())), Some(-8));
        assert_eq!(decode_int(INT4, encode(INT4, 7.6, sat())), Some(7));
        assert_eq!(decode_int(INT4, encode(INT4, -2.5, sat())), Some(-2));
        assert_eq!(decode_int(UINT2, encode(UINT2, -3.0, sat())), Some(1));
        assert_eq!(encode(INT4, f64::NAN, sat()), 0);
        assert_eq!(encode(UINT4, f64::INFINITY, sat()), 0);
        assert_eq!(decode_int(FLOAT8_E4M3FN, 1), None);
    }

    #[test]
    fn packing_is_low_bits_first_and_round_trips() {
        assert_eq!(pack(INT4, [1u8, 2, 3].into_iter()), vec![0x21, 0x03]);
        assert_eq!(
            pack(UINT2, [1u8, 2, 3, 0, 3].into_iter()),
            vec![0b0011_1001, 0b11]
        );
        assert_eq!(unpack(INT4, 3, &[0x21, 0x03]).unwrap(), vec![1, 2, 3]);
        assert_eq!(unpack(INT4, 3, &[0x21]), None);
        assert_eq!(unpack(INT2, 4, &[0x21, 0]), None);
        for dt in [INT4, UINT4, FLOAT4_E2M1, INT2, UINT2, FLOAT8_E4M3FN] {
            let n = patterns(dt) as usize;
            for len in [0, 1, 2, 3, n, n + 1] {
                let elems: Vec<u8> = (0..len).map(|i| (i % n) as u8).collect();
                let packed = pack(dt, elems.iter().copied());
                assert_eq!(packed.len(), dt.bytes_for(len).unwrap(), "{dt} {len}");
                assert_eq!(unpack(dt, len, &packed).unwrap(), elems, "{dt} {len}");
            }
        }
    }
}
