//! Source kernels: values made from shapes, attributes or a generator rather than computed from
//! an input's elements: Size, Rank, Shape, ZerosLike, Fill, Range, Variable and RandomUniform.
//!
//! - Size (int32 or int64, the `dtype` attribute; more elements than int32 holds is an error)
//!   and Rank (int32).
//! - RandomUniform: TensorFlow's generator, seeding and conversions, written from its sources
//!   (`PhiloxRandom(seed, seed2)`, `UniformDistribution`; not compared with TensorFlow's output):
//!   Philox4x32-10 keyed by `seed`, counter `(0, 0, seed2)`, each float from the low mantissa
//!   bits of one 32-bit output (f64: two outputs) over 1.0, minus 1: values in [0, 1). With
//!   `seed` or `seed2` nonzero the values depend only on the seeds, shape and dtype, so every run
//!   (graph or eager mode, any session) gives the same values, those of the stream's start
//!   (TensorFlow's stateful kernel continues the stream on later runs). With both 0 each run
//!   draws fresh seeds (the process's random hash keys, a counter, the time).

use super::common::{alloc_array, array, bad_attr, ints, numel, type_attr, with_capacity};
use super::{input, Kernel, Kernels, NodeInfo};
use crate::error::{Error, Result};
use crate::value::usize_dims;
use crate::value::{Elem, Value};
use crate::{map_array, with_array};
use es_core::DataType;
use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};

/// A scalar of `dt` holding the integer `v`.
fn int_scalar(dt: DataType, v: i64) -> Result<Value> {
    Value::I64(ArrayD::from_elem(IxDyn(&[]), v)).cast(dt)
}

fn size_factory(info: &NodeInfo) -> Result<Kernel> {
    let dt = match info.out_dtype(0) {
        Ok(t @ (DataType::INT32 | DataType::INT64)) => t,
        _ => type_attr(info, "dtype")?.unwrap_or(DataType::INT32),
    };
    if !matches!(dt, DataType::INT32 | DataType::INT64) {
        return Err(bad_attr(
            info,
            format!("attribute 'dtype' must be DT_INT32 or DT_INT64, got {dt}"),
        ));
    }
    Ok(Box::new(move |inputs| {
        let n = input(inputs, 0)?.len();
        let limit = if dt == DataType::INT32 {
            i32::MAX as usize
        } else {
            i64::MAX as usize
        };
        if n > limit {
            return Err(Error::kernel(format!(
                "Size: {n} elements do not fit in {dt}"
            )));
        }
        Ok(vec![int_scalar(dt, n as i64)?])
    }))
}

fn rank_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let r = input(inputs, 0)?.shape().len();
        Ok(vec![int_scalar(DataType::INT32, r as i64)?])
    }))
}

const PHILOX_M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
const PHILOX_W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
/// counter-based generator of TensorFlow's random ops: 10 rounds on a 128-bit counter.
fn philox(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (ctr, key);
    for round in 0..10 {
        if round > 0 {
            k = [
                k[0].wrapping_add(PHILOX_W[0]),
                k[1].wrapping_add(PHILOX_W[1]),
            ];
        }
        let p0 = u64::from(PHILOX_M[0]) * u64::from(c[0]);
        let p1 = u64::from(PHILOX_M[1]) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// A Philox stream as TensorFlow seeds it: key = seed, counter = (0, 0, seed2).
struct Philox {
    ctr: [u32; 4],
    key: [u32; 2],
}

impl Philox {
    fn new(seed: u64, seed2: u64) -> Self {
        Philox {
            ctr: [0, 0, seed2 as u32, (seed2 >> 32) as u32],
            key: [seed as u32, (seed >> 32) as u32],
        }
    }

    fn next_block(&mut self) -> [u32; 4] {
        let out = philox(self.ctr, self.key);
        for c in self.ctr.iter_mut() {
            *c = c.wrapping_add(1);
            if *c != 0 {
                break;
            }
        }
        out
    }
}

/// A seed for unseeded runs: the process's random hash keys, a counter and the time.
fn fresh_seeds() -> (u64, u64) {
    use std::hash::{BuildHasher, Hasher};
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let a = h.finish();
    h.write_u64(a);
    (a, h.finish())
}

/// `n` uniform values in [0, 1) of `dt` (TensorFlow's conversions: the low mantissa bits of one
/// 32-bit output, two for f64, over the exponent of 1, minus 1).
fn uniform(dt: DataType, dims: &[usize], seed: u64, seed2: u64) -> Result<Value> {
    let n = numel(dims)?;
    let mut g = Philox::new(seed, seed2);
    let want = if dt == DataType::DOUBLE {
        n.checked_mul(2)
            .ok_or_else(|| Error::kernel("RandomUniform: too many elements"))?
    } else {
        n
    };
    let mut bits: Vec<u32> = with_capacity(want)?;
    while bits.len() < want {
        let b = g.next_block();
        let room = want - bits.len();
        bits.extend_from_slice(&b[..room.min(4)]);
    }
    // One element from each 32-bit output.
    fn each<T>(dims: &[usize], bits: &[u32], f: impl Fn(u32) -> T) -> Result<ArrayD<T>> {
        array(dims, bits.iter().map(|&u| f(u)).collect())
    }
    Ok(match dt {
        DataType::DOUBLE => Value::F64(array(
            dims,
            bits.chunks_exact(2)
                .map(|p| {
                    let man = (u64::from(p[0] & 0xF_FFFF) << 32) | u64::from(p[1]);
                    f64::from_bits((1023 << 52) | man) - 1.0
                })
                .collect(),
        )?),
        DataType::FLOAT => Value::F32(each(dims, &bits, |u| {
            f32::from_bits(0x3F80_0000 | (u & 0x7F_FFFF)) - 1.0
        })?),
        // 10 (7) mantissa bits: m / 1024 (m / 128), exact in f32 and in the dtype.
        DataType::FLOAT16 => Value::F16(each(dims, &bits, |u| {
            f16::from_f32((u & 0x3FF) as f32 / 1024.0)
        })?),
        DataType::BF16 => Value::BF16(each(dims, &bits, |u| {
            bf16::from_f32((u & 0x7F) as f32 / 128.0)
        })?),
        _ => return Err(Error::unsupported(format!("RandomUniform of {dt}"))),
    })
}

fn random_uniform_factory(info: &NodeInfo) -> Result<Kernel> {
    let dt = match info.out_dtype(0) {
        Ok(t) if t.is_float() => t,
        _ => type_attr(info, "dtype")?.unwrap_or(DataType::UNDEFINED),
    };
    if !dt.is_float() {
        return Err(Error::unsupported(format!("RandomUniform of {dt}")));
    }
    let (seed, seed2) = (info.int("seed", 0)? as u64, info.int("seed2", 0)? as u64);
    Ok(Box::new(move |inputs| {
        let shape = ints(input(inputs, 0)?);
        let dims = usize_dims(&shape).ok_or_else(|| {
            Error::kernel(format!("RandomUniform: shape {shape:?} has a negative dim"))
        })?;
        let (s, s2) = if seed == 0 && seed2 == 0 {
            fresh_seeds()
        } else {
            (seed, seed2)
        };
        Ok(vec![uniform(dt, &dims, s, s2)?])
    }))
}

/// The length of a range, as the shape rule computes it.
fn range_len_int(s: i128, l: i128, d: i128, closed: bool) -> Result<usize> {
    if d == 0 {
        return Err(Error::kernel("Range: delta must not be 0"));
    }
    let span = l - s;
    let (q, r) = (span / d, span % d);
    let inexact = r != 0;
    let floor = if inexact && ((span < 0) != (d < 0)) {
        q - 1
    } else {
        q
    };
    let n = if closed || inexact { floor + 1 } else { floor };
    if n < 0 {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l}, delta {d} give a negative length"
        )));
    }
    usize::try_from(n).map_err(|_| Error::kernel("Range: too many elements"))
}

fn range_len_float(s: f64, l: f64, d: f64, closed: bool) -> Result<usize> {
    if d == 0.0 || !d.is_finite() || !s.is_finite() || !l.is_finite() {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l} and delta {d} must be finite and delta non-zero"
        )));
    }
    let q = (l - s) / d;
    let n = if closed { q.floor() + 1.0 } else { q.ceil() };
    if n < 0.0 {
        return Err(Error::kernel(format!(
            "Range: start {s}, limit {l}, delta {d} give a negative length"
        )));
    }
    if n >= (1u64 << 48) as f64 {
        return Err(Error::kernel("Range: too many elements"));
    }
    Ok(n as usize)
}

fn scalar_i128(v: &Value, what: &str) -> Result<i128> {
    if v.len() != 1 {
        return Err(Error::kernel(format!("{what} must hold one value")));
    }
    Ok(match v {
        Value::I64(a) => a.iter().map(|&x| i128::from(x)).next().unwrap_or(0),
        Value::U64(a) => a.iter().map(|&x| i128::from(x)).next().unwrap_or(0),
        _ => v.to_f64_vec().first().map(|&x| x as i128).unwrap_or(0),
    })
}

fn range_factory(info: &NodeInfo) -> Result<Kernel> {
    let closed = info.bool("is_closed", false)?;
    Ok(Box::new(move |inputs| {
        let (s, l, d) = (input(inputs, 0)?, input(inputs, 1)?, input(inputs, 2)?);
        let dt = s.dtype();
        if dt.is_float() {
            let f = |v: &Value, w: &str| -> Result<f64> {
                match v.to_f64_vec().as_slice() {
                    [x] => Ok(*x),
                    _ => Err(Error::kernel(format!("{w} must hold one value"))),
                }
            };
            let (a, b, c) = (f(s, "start")?, f(l, "limit")?, f(d, "delta")?);
            let n = range_len_float(a, b, c, closed)?;
            let mut v = with_capacity(n)?;
            v.extend((0..n).map(|i| a + i as f64 * c));
            return Value::F64(array(&[n], v)?).cast(dt).map(|v| vec![v]);
        }
        if dt == DataType::BOOL {
            return Err(Error::kernel("Range does not take bool tensors"));
        }
        let (a, b, c) = (
            scalar_i128(s, "start")?,
            scalar_i128(l, "limit")?,
            scalar_i128(d, "delta")?,
        );
        let n = range_len_int(a, b, c, closed)?;
        let vals = (0..n as i128).map(|i| a + i * c);
        let y = match dt {
            DataType::UINT64 => {
                let mut v = with_capacity(n)?;
                v.extend(vals.map(|x| x as u64));
                Value::U64(array(&[n], v)?)
            }
            _ => {
                let mut v = with_capacity(n)?;
                v.extend(vals.map(|x| x as i64));
                let y = Value::I64(array(&[n], v)?);
                if dt == DataType::INT64 {
                    y
                } else {
                    y.cast(dt)?
                }
            }
        };
        Ok(vec![y])
    }))
}

/// Variable: its input when connected, else its initial value (the `value` attribute). The
/// library has no assignment op, so a variable keeps that value.
fn variable_factory(info: &NodeInfo) -> Result<Kernel> {
    let init = match info
        .attr("value")
        .and_then(es_core::attr::AttrValue::as_tensor)
    {
        Some(t) if !t.data.is_empty() => Some(Value::from_tensor(t)?),
        _ => None,
    };
    let name = info.node.name.to_string();
    Ok(Box::new(move |inputs| {
        match (inputs.first().copied().flatten(), &init) {
            (Some(x), _) => Ok(vec![x.clone()]),
            (None, Some(v)) => Ok(vec![v.clone()]),
            (None, None) => Err(Error::kernel(format!(
                "variable '{name}' has no value: connect its input or give it a 'value' attribute"
            ))),
        }
    }))
}

fn shape_factory(info: &NodeInfo) -> Result<Kernel> {
    let dt = info.out_dtype(0)?;
    Ok(Box::new(move |inputs| {
        let x = input(inputs, 0)?;
        let dims: Vec<i64> = x.dims();
        Value::I64(
            ArrayD::from_shape_vec(IxDyn(&[dims.len()]), dims)
                .map_err(|e| Error::kernel(e.to_string()))?,
        )
        .cast(dt)
        .map(|v| vec![v])
    }))
}

fn zeros_like_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let x = input(inputs, 0)?;
        Ok(vec![
            // Zero whatever x holds (0 * inf and 0 * NaN would be NaN).
            map_array!(x, a => a.mapv(|_| Elem::from_f64(0.0))),
        ])
    }))
}

fn fill_factory(_: &NodeInfo) -> Result<Kernel> {
    Ok(Box::new(|inputs| {
        let dims = input(inputs, 0)?.to_i64_vec();
        if dims.iter().any(|&d| d < 0) {
            return Err(Error::kernel(format!("bad dims {dims:?}")));
        }
        let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let v = input(inputs, 1)?;
        if v.len() != 1 {
            return Err(Error::kernel("the fill value must be a scalar"));
        }
        Ok(vec![with_array!(v, a => {
            let x = *a.iter().next().expect("one element");
            Elem::wrap(alloc_array(&dims, x)?)
        })])
    }))
}

/// This family's kernels, which [`super::registry`] collects.
pub(super) const KERNELS: Kernels = &[
    (&["Size"], size_factory),
    (&["Rank"], rank_factory),
    (&["Range"], range_factory),
    (&["RandomUniform"], random_uniform_factory),
    (&["Variable"], variable_factory),
    (&["Shape"], shape_factory),
    (&["ZerosLike"], zeros_like_factory),
    (&["Fill"], fill_factory),
];

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::attr::AttrValue;
    use es_core::DataType;

    use crate::kernels::common::testing::{f32s, i64s, node_with_outputs as node, run, run1};

    #[test]
    fn oversized_fill_is_an_error_not_a_panic() {
        let one = Value::F32(ArrayD::from_elem(IxDyn(&[]), 1.0));
        for (dims, want) in [
            (vec![1i64 << 31, 1 << 31], "cannot allocate"),
            (vec![1 << 40, 1 << 30], "more elements than can be stored"),
            (vec![1 << 62, 4], "more elements than can be stored"),
            (
                vec![0, 1 << 62, 1 << 62],
                "more elements than can be stored",
            ),
        ] {
            let n = dims.len();
            let shape = Value::I64(ArrayD::from_shape_vec(IxDyn(&[n]), dims.clone()).unwrap());
            let e = run1("Fill", &[], &[&shape, &one]).unwrap_err().to_string();
            let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
            assert!(e.contains(want) && e.contains(&format!("{dims:?}")), "{e}");
        }
        let shape = Value::I64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![2, 3]).unwrap());
        let y = run1("Fill", &[], &[&shape, &one]).unwrap();
        assert_eq!(y.shape(), &[2, 3]);
        assert_eq!(y.to_f64_vec(), vec![1.0; 6]);
    }

    #[test]
    fn philox_matches_the_random123_known_answers() {
        assert_eq!(
            philox([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
        // The 128-bit counter carries.
        let mut g = Philox {
            ctr: [u32::MAX, u32::MAX, 0, 0],
            key: [0, 0],
        };
        g.next_block();
        assert_eq!(g.ctr, [0, 0, 1, 0]);
    }

    #[test]
    fn random_uniform_is_seeded_and_in_range() {
        let shape = i64s(&[2], &[3, 1000]);
        for dt in [
            DataType::FLOAT,
            DataType::DOUBLE,
            DataType::FLOAT16,
            DataType::BF16,
        ] {
            let attrs = [
                ("dtype", AttrValue::Type(dt)),
                ("seed", AttrValue::Int(7)),
                ("seed2", AttrValue::Int(0)),
            ];
            let a = run1("RandomUniform", &attrs, &[&shape]).unwrap();
            let b = run1("RandomUniform", &attrs, &[&shape]).unwrap();
            assert_eq!(a, b);
            assert_eq!((a.dtype(), a.shape()), (dt, &[3, 1000][..]));
            let v = a.to_f64_vec();
            assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)), "{dt}");
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            assert!((mean - 0.5).abs() < 0.03, "{dt}: mean {mean}");
            let other = [("dtype", AttrValue::Type(dt)), ("seed", AttrValue::Int(8))];
            assert_ne!(run1("RandomUniform", &other, &[&shape]).unwrap(), a);
        }
        // The first f32 value: the low 23 bits of Philox's first output for key 7.
        let first = philox([0; 4], [7, 0])[0];
        let a = run1(
            "RandomUniform",
            &[
                ("dtype", AttrValue::Type(DataType::FLOAT)),
                ("seed", AttrValue::Int(7)),
            ],
            &[&i64s(&[1], &[1])],
        )
        .unwrap();
        assert_eq!(
            a.to_f64_vec(),
            vec![f64::from((first & 0x7F_FFFF) as f32 / 8_388_608.0)]
        );
        let e = run1(
            "RandomUniform",
            &[("dtype", AttrValue::Type(DataType::FLOAT))],
            &[&i64s(&[2], &[2, -1])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("negative dim"), "{e}");
    }

    #[test]
    fn size_and_rank() {
        let x = f32s(&[2, 3], &[0.0; 6]);
        let n = node("Size", &[("dtype", AttrValue::Int(9))], &[DataType::INT64]);
        let y = run(&n, &[Some(&x)]).unwrap().remove(0);
        assert_eq!((y.dtype(), y.to_i64_vec()), (DataType::INT64, vec![6]));
        let y = run1("Rank", &[], &[&x]).unwrap();
        assert_eq!((y.dtype(), y.to_i64_vec()), (DataType::INT32, vec![2]));
    }

    #[test]
    fn range_lengths() {
        assert_eq!(range_len_int(0, 10, 3, false).unwrap(), 4);
        assert_eq!(range_len_int(0, 9, 3, false).unwrap(), 3);
        assert_eq!(range_len_int(0, 9, 3, true).unwrap(), 4);
        assert_eq!(range_len_int(5, 0, -2, false).unwrap(), 3);
        assert!(range_len_int(0, 5, -1, false).is_err());
        assert!(range_len_int(0, 5, 0, false).is_err());
        assert_eq!(range_len_float(0.0, 1.0, 0.3, false).unwrap(), 4);
        assert!(range_len_float(0.0, f64::INFINITY, 1.0, false).is_err());
        assert!(range_len_float(0.0, 1e300, 1e-300, false).is_err());
    }

    #[test]
    fn zeros_like_zeroes_inf_and_nan() {
        let x = f32s(&[3], &[f32::INFINITY, f32::NAN, -2.0]);
        let y = &run1("ZerosLike", &[], &[&x]).unwrap();
        assert_eq!(y.to_f64_vec(), vec![0.0; 3]);
    }
}
