//! Unit tests of the convolution engine (`nd`): spans, Conv2D/DepthwiseConv2D, Conv3D,
//! Conv2DTranspose, DeformableConv2D and the factories' errors.

use super::*;
use crate::kernels::common::testing::{arr, factory, li, node, unsupported};
use es_core::attr::AttrValue;

/// A small deterministic pseudo-random sequence of integers in [-4, 4].
fn ints_seq(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 9) as i64 - 4
        })
        .collect()
}

fn attrs3(p: [[usize; 2]; 3], groups: usize) -> ConvAttrs {
    ConvAttrs {
        rank: 3,
        last: false,
        s: [1; 3],
        d: [1; 3],
        p,
        same: false,
        groups,
        depthwise: false,
        fpos: [0, 1, 2, 3, 4],
    }
}

/// 2-D NCHW attributes: pads [top, bottom, left, right]; `groups` None for depthwise.
fn attrs2(p: [usize; 4], same: bool, groups: Option<usize>) -> ConvAttrs {
    ConvAttrs {
        rank: 2,
        p: [[0, 0], [p[0], p[1]], [p[2], p[3]]],
        same,
        groups: groups.unwrap_or(1),
        depthwise: groups.is_none(),
        // A depthwise filter [C, K, k...] reads (in, multiplier) as conv2d_attrs sets them.
        fpos: if groups.is_none() {
            [1, 0, 2, 3, 0]
        } else {
            [0, 1, 2, 3, 0]
        },
        ..attrs3([[0; 2]; 3], 1)
    }
}

/// A convolution with attributes `a` run in the compute type `T`.
fn conv_run<T: Pick + LinalgScalar>(
    x: &Value,
    f: &Value,
    bias: Option<&Value>,
    a: &ConvAttrs,
) -> Result<ArrayD<T>> {
    ConvRun { a, x, f, bias }.run::<T>()
}

#[test]
fn conv_matches_a_direct_sum() {
    // x 1x1x3x3 = 1..9, 2x2 ones kernel, pads 1 on top/left only.
    let x = Value::F64(arr(&[1, 1, 3, 3], (1..=9).map(f64::from).collect()));
    let f = Value::F64(arr(&[1, 1, 2, 2], vec![1.0; 4]));
    let a = attrs2([1, 0, 1, 0], false, Some(1));
    let y = conv_run::<f64>(&x, &f, None, &a).unwrap();
    assert_eq!(y.shape(), &[1, 1, 3, 3]);
    let want = [1., 3., 5., 5., 12., 16., 11., 24., 28.];
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
    // Bias, and NHWC gives the same numbers for one channel.
    let b = Value::F64(arr(&[1], vec![0.5]));
    let mut a2 = a;
    a2.last = true;
    let x2 = crate::kernels::shape::reshape(&x, &[1, 3, 3, 1]).unwrap();
    let y2 = conv_run::<f64>(&x2, &f, Some(&b), &a2).unwrap();
    assert_eq!(y2.shape(), &[1, 3, 3, 1]);
    assert_eq!(
        y2.iter().copied().collect::<Vec<_>>(),
        want.iter().map(|v| v + 0.5).collect::<Vec<_>>()
    );
    // A mismatched filter and too much dilation are errors, not panics.
    let f3 = Value::F64(arr(&[1, 2, 2, 2], vec![1.0; 8]));
    assert!(conv_run::<f64>(&x, &f3, None, &a).is_err());
    let mut a3 = attrs2([0; 4], false, Some(1));
    a3.d = [1, 5, 5];
    assert!(conv_run::<f64>(&x, &f, None, &a3).is_err());
    // SAME: 3x3 output with pads (0, 1) on each spatial dim for a 2x2 kernel.
    let y4 = conv_run::<f64>(&x, &f, None, &attrs2([0; 4], true, Some(1))).unwrap();
    assert_eq!(
        y4.iter().copied().collect::<Vec<_>>(),
        [12., 16., 9., 24., 28., 15., 15., 17., 9.]
    );
}

#[test]
fn depthwise_is_a_grouped_conv() {
    // 2 channels, multiplier 1, 1x1 kernel: y = x * w[c].
    let x = Value::F32(arr(&[1, 2, 1, 2], vec![1., 2., 3., 4.]));
    let f = Value::F32(arr(&[2, 1, 1, 1], vec![10., 100.]));
    let a = attrs2([0; 4], false, None);
    let y = conv_run::<f32>(&x, &f, None, &a).unwrap();
    assert_eq!(
        y.iter().copied().collect::<Vec<_>>(),
        vec![10., 20., 300., 400.]
    );
}

#[test]
fn depthwise_padding_keeps_a_nan_or_infinite_weight() {
    // x (1, 2, 1, 2), weights [0.5, NaN] (then [0.5, inf]), 1x1 kernel, pads 2 on the right: the
    // padded outputs are 0 * w, NaN for channel 1 (the ONNX reference), as with groups of 2.
    let x = Value::F32(arr(&[1, 2, 1, 2], vec![1., 2., 3., 4.]));
    for w in [f32::NAN, f32::INFINITY] {
        let f = Value::F32(arr(&[2, 1, 1, 1], vec![0.5, w]));
        let a = attrs2([0, 0, 0, 2], false, None);
        let y: Vec<f32> = conv_run::<f32>(&x, &f, None, &a)
            .unwrap()
            .iter()
            .copied()
            .collect();
        assert_eq!(&y[..4], &[0.5, 1.0, 0.0, 0.0]);
        let want = [3.0 * w, 4.0 * w, f32::NAN, f32::NAN];
        for (g, w) in y[4..].iter().zip(want) {
            assert!(*g == w || (g.is_nan() && w.is_nan()), "{y:?}");
        }
    }
}

#[test]
fn spans_of_outputs_reading_the_input() {
    // Pad 1 (offset -1), stride 1: output 0 reads the pad.
    assert_eq!(span(3, 1, -1, 3), (1, 3));
    assert_eq!(span(3, 1, 1, 3), (0, 2));
    // Stride 2, offset -1, size 5: outputs 1 and 2 read 1 and 3.
    assert_eq!(span(3, 2, -1, 5), (1, 3));
    assert_eq!(span(2, 1, 5, 3), (0, 0));
    assert_eq!(span(4, usize::MAX, -3, 2), (1, 1));
    assert_eq!(span(0, 1, 0, 3), (0, 0));
}

#[test]
fn conv3d_of_depth_one_is_a_2d_conv() {
    // x 1..9 (3x3), 2x2 ones kernel, pads 1 on top/left only (as conv/mod.rs's test).
    let x = Value::F64(arr(&[1, 1, 1, 3, 3], (1..=9).map(f64::from).collect()));
    let f = Value::F64(arr(&[1, 1, 1, 2, 2], vec![1.0; 4]));
    let a = attrs3([[0, 0], [1, 0], [1, 0]], 1);
    let r = ConvRun {
        a: &a,
        x: &x,
        f: &f,
        bias: None,
    };
    let y = r.run::<f64>().unwrap();
    assert_eq!(y.shape(), &[1, 1, 1, 3, 3]);
    let want = [1., 3., 5., 5., 12., 16., 11., 24., 28.];
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
}

#[test]
fn conv3d_sums_a_cube() {
    // x 1..8 (2x2x2), a 2x2x2 ones kernel, pads 1 everywhere: the centre sums all (36),
    // a corner reads one element.
    let x = Value::I8(arr(&[1, 2, 2, 2, 1], (1..=8).collect()));
    let f = Value::I8(arr(&[1, 2, 2, 2, 1], vec![1; 8]));
    let b = Value::I32(arr(&[1], vec![100]));
    let mut a = attrs3([[1, 1]; 3], 1);
    a.last = true;
    a.fpos = [0, 4, 1, 2, 3];
    let r = ConvRun {
        a: &a,
        x: &x,
        f: &f,
        bias: Some(&b),
    };
    let y = dispatch("Conv3D", &x, true, None, &r).unwrap();
    assert_eq!(y.shape(), &[1, 3, 3, 3, 1]);
    let v = y.to_i64_vec();
    assert_eq!(v[13], 136);
    assert_eq!(v[0], 101);
    assert_eq!(v[26], 108);
    assert_eq!(y.dtype(), DataType::INT32);
    // A bias of the wrong length and a mismatched filter are errors.
    let b2 = Value::I32(arr(&[2], vec![1, 2]));
    assert!(conv_run::<i64>(&x, &f, Some(&b2), &a).is_err());
    let f2 = Value::I8(arr(&[1, 2, 2, 2, 2], vec![1; 16]));
    assert!(conv_run::<i64>(&x, &f2, None, &a).is_err());
    // A kernel larger than the padded input.
    let mut a4 = a;
    a4.p = [[0, 0]; 3];
    a4.d = [3, 1, 1];
    assert!(conv_run::<i64>(&x, &f, None, &a4).is_err());
}

#[test]
fn transposed_conv_is_the_adjoint_of_the_conv() {
    // <conv(x), g> == <x, conv_transpose(g)> for a grouped, strided, dilated, padded 3-D
    // geometry (exact in integers).
    let ch = Chans {
        n: 2,
        c: 4,
        o: 6,
        groups: 2,
    };
    let v = Vol::forward(
        [3, 7, 6],
        [2, 3, 2],
        [1, 2, 3],
        [2, 1, 2],
        [[1, 0], [1, 2], [0, 1]],
    )
    .unwrap();
    let x = ints_seq(ch.n * ch.c * v.in_len, 1);
    let f = ints_seq(ch.o * (ch.c / ch.groups) * v.k_len, 2);
    let g = ints_seq(ch.n * ch.o * v.out_len, 3);
    let y = conv_fwd(&x, &f, ch, &v, None).unwrap();
    let xt = conv_bwd_input(&g, &f, ch, &v).unwrap();
    assert_eq!(y.len(), g.len());
    assert_eq!(xt.len(), x.len());
    let dot = |a: &[i64], b: &[i64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<i64>();
    assert_eq!(dot(&y, &g), dot(&x, &xt));
    assert_ne!(dot(&y, &g), 0);
}

#[test]
fn conv2d_transpose_scatters_each_input() {
    // x 2x2 = 1..4, a 2x2 kernel [1, 10, 100, 1000], stride 2: each x value becomes a
    // 2x2 block of the 4x4 output.
    let input_size = Value::I32(arr(&[4], vec![1, 1, 4, 4]));
    let n = node(
        "Conv2DTranspose",
        &[
            ("strides", li(&[1, 1, 2, 2])),
            ("pads", li(&[0, 0, 0, 0])),
            ("data_format", AttrValue::String("NCHW".into())),
        ],
    );
    let k = factory(conv2d_transpose_factory, &n, vec![Some(input_size)]).unwrap();
    let x = Value::F32(arr(&[1, 1, 2, 2], vec![1., 2., 3., 4.]));
    let f = Value::F32(arr(&[1, 1, 2, 2], vec![1., 10., 100., 1000.]));
    let y = &k(&[None, Some(&x), Some(&f)]).unwrap()[0];
    assert_eq!(y.shape(), &[1, 1, 4, 4]);
    let want = [
        1., 10., 2., 20., 100., 1000., 200., 2000., 3., 30., 4., 40., 300., 3000., 400., 4000.,
    ];
    assert_eq!(y.to_f64_vec(), want);
    // An input_size the geometry does not give.
    let bad = Value::I32(arr(&[4], vec![1, 1, 6, 4]));
    let k = factory(conv2d_transpose_factory, &n, vec![Some(bad)]).unwrap();
    let e = k(&[None, Some(&x), Some(&f)]).unwrap_err().to_string();
    assert!(e.contains("input_size"), "{e}");
    // Channels: input_size's C must be the filter's per-group outputs times groups.
    let bad = Value::I32(arr(&[4], vec![1, 2, 4, 4]));
    let k = factory(conv2d_transpose_factory, &n, vec![Some(bad)]).unwrap();
    assert!(k(&[None, Some(&x), Some(&f)]).is_err());
}

#[test]
fn conv2d_transpose_factory_errors() {
    let base = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[0, 0, 0, 0]))];
    let size = || Some(Value::I64(arr(&[4], vec![1, 3, 3, 1])));
    let n = node("Conv2DTranspose", &base);
    let e = unsupported(factory(conv2d_transpose_factory, &n, vec![None]));
    assert!(e.contains("non-constant input_size"), "{e}");
    let mut attrs = base.to_vec();
    attrs.push(("output_padding", li(&[1, 0, 0, 0])));
    let n = node("Conv2DTranspose", &attrs);
    assert!(factory(conv2d_transpose_factory, &n, vec![size()]).is_err());
    let mut attrs = base.to_vec();
    attrs.push(("offset_x", AttrValue::Int(3)));
    let n = node("Conv2DTranspose", &attrs);
    let e = unsupported(factory(conv2d_transpose_factory, &n, vec![size()]));
    assert!(e.contains("offset_x"), "{e}");
    let n = node("Conv2DTranspose", &base);
    let three = Some(Value::I64(arr(&[3], vec![1, 3, 3])));
    assert!(factory(conv2d_transpose_factory, &n, vec![three]).is_err());
    let neg = Some(Value::I64(arr(&[4], vec![1, -3, 3, 1])));
    assert!(factory(conv2d_transpose_factory, &n, vec![neg]).is_err());
}

fn deform(
    x: &Value,
    f: &Value,
    off: &Value,
    pads: [usize; 4],
    dg: usize,
    modulated: bool,
) -> Result<ArrayD<f64>> {
    let a = DeformAttrs {
        conv: attrs2(pads, false, Some(1)),
        dg,
        modulated,
    };
    DeformRun {
        run: Run {
            a: &a,
            x,
            f,
            bias: None,
        },
        offsets: off,
    }
    .run::<f64>()
}

#[test]
fn deformable_conv_with_zero_offsets_is_a_conv() {
    let x = Value::F64(arr(&[1, 2, 3, 3], (0..18).map(f64::from).collect()));
    let fv: Vec<f64> = ints_seq(3 * 2 * 4, 7)
        .into_iter()
        .map(|v| v as f64)
        .collect();
    let f = Value::F64(arr(&[3, 2, 2, 2], fv.clone()));
    // dg 2, modulated: 3 * 2 * 4 channels at 3x3 (pads 1 on bottom/right); masks 1.
    let mut ov = vec![0.0; 24 * 9];
    ov[16 * 9..].fill(1.0);
    let off = Value::F64(arr(&[1, 24, 3, 3], ov));
    let y = deform(&x, &f, &off, [0, 1, 0, 1], 2, true).unwrap();
    let v = Vol::forward(
        [1, 3, 3],
        [1, 2, 2],
        [1; 3],
        [1; 3],
        [[0, 0], [0, 1], [0, 1]],
    )
    .unwrap();
    let ch = Chans {
        n: 1,
        c: 2,
        o: 3,
        groups: 1,
    };
    let xv: Vec<f64> = (0..18).map(f64::from).collect();
    let want = conv_fwd(&xv, &fv, ch, &v, None).unwrap();
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), want);
    // Offsets of the wrong size, and channels that deformable_groups does not divide.
    let short = Value::F64(arr(&[1, 16, 3, 3], vec![0.0; 16 * 9]));
    assert!(deform(&x, &f, &short, [0, 1, 0, 1], 2, true).is_err());
    assert!(deform(&x, &f, &short, [0, 1, 0, 1], 2, false).is_ok());
    let off3 = Value::F64(arr(&[1, 36, 3, 3], vec![0.0; 36 * 9]));
    assert!(deform(&x, &f, &off3, [0, 1, 0, 1], 3, true).is_err());
}

#[test]
fn deformable_conv_samples_bilinearly() {
    // One channel 1x3 = [1, 2, 4], a 1x1 kernel of 1, v1 (no mask).
    let x = Value::F64(arr(&[1, 1, 1, 3], vec![1., 2., 4.]));
    let f = Value::F64(arr(&[1, 1, 1, 1], vec![1.]));
    let run = |dx: [f64; 3], dy: [f64; 3]| {
        let mut v = dx.to_vec();
        v.extend(dy);
        let off = Value::F64(arr(&[1, 2, 1, 3], v));
        deform(&x, &f, &off, [0; 4], 1, false)
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>()
    };
    assert_eq!(run([0.; 3], [0.; 3]), [1., 2., 4.]);
    // x + 1: the last samples outside (0).
    assert_eq!(run([1.; 3], [0.; 3]), [2., 4., 0.]);
    // x + 0.5: the mean of two neighbours; the last half outside.
    assert_eq!(run([0.5; 3], [0.; 3]), [1.5, 3., 2.]);
    // y - 0.25: a quarter of the row above (outside) is lost; NaN reads 0.
    assert_eq!(run([0.; 3], [-0.25, f64::NAN, 0.]), [0.75, 0., 4.]);
    // Modulated: a mask scales the sample.
    let off = Value::F64(arr(
        &[1, 3, 1, 3],
        vec![0., 0., 0., 0., 0., 0., 0.5, 2., 0.],
    ));
    let y = deform(&x, &f, &off, [0; 4], 1, true).unwrap();
    assert_eq!(y.iter().copied().collect::<Vec<_>>(), [0.5, 4., 0.]);
}

#[test]
fn conv3d_factory_errors() {
    let base = [
        ("strides", li(&[1, 1, 1, 1, 1])),
        ("pads", li(&[0, 0, 0, 0, 0, 0])),
    ];
    let mut a = base.to_vec();
    a.push(("data_format", AttrValue::String("NHWC".into())));
    let e = factory(conv3d_factory, &node("Conv3D", &a), Vec::new())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("data_format"), "{e}");
    let a = [("strides", li(&[1, 1, 1, 1])), ("pads", li(&[0; 6]))];
    assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
    let a = [("strides", li(&[1, 1, 0, 1, 1])), ("pads", li(&[0; 6]))];
    assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
    let a = [("strides", li(&[1; 5])), ("pads", li(&[0, 0, -1, 0, 0, 0]))];
    assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
    let mut a = base.to_vec();
    a.push(("groups", AttrValue::Int(0)));
    assert!(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()).is_err());
    let mut a = base.to_vec();
    a.push(("offset_x", AttrValue::Int(1)));
    let e = unsupported(factory(conv3d_factory, &node("Conv3D", &a), Vec::new()));
    assert!(e.contains("offset_x"), "{e}");
    // A float x of an unsupported dtype at run time is an error, not a panic.
    let k = factory(conv3d_factory, &node("Conv3D", &base), Vec::new()).unwrap();
    let x = Value::I16(arr(&[1, 1, 1, 1, 1], vec![1]));
    assert!(k(&[Some(&x), Some(&x)]).is_err());
}

/// The input position (z, y, x) that tap `t` of output `o` reads, None in the padding.
fn tap_input(v: &Vol, o: [usize; 3], t: [usize; 3]) -> Option<[usize; 3]> {
    let mut at = [0; 3];
    for a in 0..3 {
        let i = (o[a] * v.s[a] + t[a] * v.d[a]) as i64 - v.p[a] as i64;
        at[a] = usize::try_from(i).ok().filter(|&i| i < v.i[a])?;
    }
    Some(at)
}

/// A convolution by definition (f64): y[n, o, z, y, x] = bias[o] + sum over the group's input
/// channels and the taps of w * x, zero outside the input.
fn naive_conv(x: &[f64], f: &[f64], ch: Chans, v: &Vol, bias: Option<&[f64]>) -> Vec<f64> {
    let (cg, og) = (ch.c / ch.groups, ch.o / ch.groups);
    let [id, ih, iw] = v.i;
    let [od, oh, ow] = v.o;
    let mut y = vec![0.0; ch.n * ch.o * v.out_len];
    for n in 0..ch.n {
        for o in 0..ch.o {
            let g = o / og;
            for z in 0..od {
                for yy in 0..oh {
                    for xx in 0..ow {
                        let mut s = bias.map_or(0.0, |b| b[o]);
                        for ci in 0..cg {
                            let c = g * cg + ci;
                            let mut t = 0;
                            for kd in 0..v.k[0] {
                                for kh in 0..v.k[1] {
                                    for kw in 0..v.k[2] {
                                        let w = f[(o * cg + ci) * v.k_len + t];
                                        t += 1;
                                        if let Some([iz, iy, ix]) =
                                            tap_input(v, [z, yy, xx], [kd, kh, kw])
                                        {
                                            let at =
                                                ((n * ch.c + c) * id + iz) * ih * iw + iy * iw + ix;
                                            s += w * x[at];
                                        }
                                    }
                                }
                            }
                        }
                        y[((n * ch.o + o) * od + z) * oh * ow + yy * ow + xx] = s;
                    }
                }
            }
        }
    }
    y
}

/// conv_fwd at 1 and 2 threads (f64 and f32, with a bias) against [`naive_conv`].
fn check_fwd(ch: Chans, v: &Vol, what: &str) {
    let to_f = |s: Vec<i64>| s.into_iter().map(|v| v as f64 * 0.25).collect::<Vec<_>>();
    let x = to_f(ints_seq(ch.n * ch.c * v.in_len, 11));
    let f = to_f(ints_seq(ch.o * (ch.c / ch.groups) * v.k_len, 12));
    let b = to_f(ints_seq(ch.o, 13));
    let want = naive_conv(&x, &f, ch, v, Some(&b));
    for threads in [1, 2] {
        let y = par::run_with(threads, || conv_fwd(&x, &f, ch, v, Some(&b))).unwrap();
        // Quarter-integer inputs: the f64 sums are exact.
        assert_eq!(y, want, "f64 {threads} threads: {what}");
        // Into a buffer of garbage (a reused arena slot): every element is written.
        let mut into = vec![f64::NAN; want.len()];
        par::run_with(threads, || {
            conv_fwd_into(&x, &f, ch, v, Some(&b), &mut into)
        })
        .unwrap();
        assert_eq!(into, want, "f64 into NaNs, {threads} threads: {what}");
        let (x32, f32s, b32): (Vec<f32>, Vec<f32>, Vec<f32>) = (
            x.iter().map(|&v| v as f32).collect(),
            f.iter().map(|&v| v as f32).collect(),
            b.iter().map(|&v| v as f32).collect(),
        );
        let y32 = par::run_with(threads, || conv_fwd(&x32, &f32s, ch, v, Some(&b32))).unwrap();
        for (g, w) in y32.iter().zip(&want) {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "f32 {threads} threads: {what}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn tiled_and_split_convolutions_match_the_definition() {
    let chans = |n, c, o, groups| Chans { n, c, o, groups };
    let two = |i: [usize; 2], k: [usize; 2], s: usize, d: usize, p: [usize; 4]| {
        Vol::forward(
            [1, i[0], i[1]],
            [1, k[0], k[1]],
            [1, s, s],
            [1, d, d],
            [[0, 0], [p[0], p[1]], [p[2], p[3]]],
        )
        .unwrap()
    };
    let cases = [
        // Many tiles (kk * pixels * 8 bytes well above TILE_BYTES), rows not a multiple of
        // the tile, at 2 threads split by tiles.
        (
            chans(1, 16, 24, 1),
            two([45, 37], [3, 3], 1, 1, [1, 1, 1, 1]),
        ),
        // 1x1 with unit stride (read in place), split by tiles, batch 2.
        (chans(2, 64, 80, 1), two([30, 31], [1, 1], 1, 1, [0; 4])),
        // Strided 1x1 (unfolded), stride larger than the kernel.
        (chans(1, 32, 40, 1), two([29, 30], [1, 1], 2, 1, [0; 4])),
        // Few pixels, many channels: split by output channels; 1x1 and 3x3.
        (chans(1, 256, 256, 1), two([7, 7], [1, 1], 1, 1, [0; 4])),
        (
            chans(1, 128, 160, 1),
            two([5, 6], [3, 3], 1, 1, [1, 1, 1, 1]),
        ),
        // Groups, dilation, padding larger than the kernel.
        (
            chans(2, 12, 18, 3),
            two([20, 23], [3, 2], 1, 2, [4, 3, 2, 5]),
        ),
        // A 1-pixel image.
        (chans(1, 8, 8, 2), two([1, 1], [3, 3], 1, 1, [1, 1, 1, 1])),
        // No input channels: the bias alone.
        (chans(1, 0, 5, 1), two([4, 3], [3, 3], 1, 1, [1, 1, 1, 1])),
        // Trailing pads only (windows past the end read zeros), stride 2 along W.
        (chans(1, 5, 7, 1), two([9, 10], [3, 3], 2, 1, [0, 2, 0, 2])),
        // Depthwise with multiplier 2 (the direct kernel) and its bias.
        (chans(2, 6, 12, 6), two([9, 17], [3, 3], 2, 1, [1, 1, 1, 1])),
    ];
    for (ch, v) in cases {
        check_fwd(ch, &v, &format!("{ch:?} {v:?}"));
    }
    // 3-D, tiled across depth slices.
    let v = Vol::forward(
        [6, 20, 21],
        [3, 3, 3],
        [1, 2, 1],
        [1; 3],
        [[1, 1], [1, 0], [0, 1]],
    )
    .unwrap();
    check_fwd(chans(1, 8, 12, 1), &v, "3-D");
}

#[test]
fn a_constant_filter_is_packed_once_with_the_same_results() {
    use es_core::{Format, Shape, TensorDesc};
    // x f16 NCHW [1, 3, 5, 6]; filter f16 HWCN [3, 3, 3, 4] (kh, kw, in, out): packed to f32
    // [4, 3, 3, 3] at compile time.
    let desc = |dt, format, dims: &[i64]| {
        let mut d = TensorDesc::new(dt, Shape::from_slice(dims));
        d.format = format;
        d
    };
    let xd = desc(DataType::FLOAT16, Format::NCHW, &[1, 3, 5, 6]);
    let fd = desc(DataType::FLOAT16, Format::HWCN, &[3, 3, 3, 4]);
    let xs: Vec<f32> = ints_seq(90, 21).iter().map(|&v| v as f32 * 0.5).collect();
    let fs: Vec<f32> = ints_seq(108, 22).iter().map(|&v| v as f32 * 0.25).collect();
    let x = Value::F32(arr(&[1, 3, 5, 6], xs))
        .cast(DataType::FLOAT16)
        .unwrap();
    let f = Value::F32(arr(&[3, 3, 3, 4], fs))
        .cast(DataType::FLOAT16)
        .unwrap();
    let n = node(
        "Conv2D",
        &[
            ("strides", li(&[1, 1, 1, 1])),
            ("pads", li(&[1, 0, 2, 1])),
            ("data_format", AttrValue::String("NCHW".into())),
        ],
    );
    let mut n = n;
    n.outputs.push(es_core::graph::OutputSlot {
        name: "y".into(),
        ir_index: 0,
        desc: TensorDesc::new(DataType::FLOAT16, Shape::scalar()).into(),
        consumers: Vec::new(),
    });
    let kernel = |consts: Vec<Option<Value>>| {
        conv2d_factory(&NodeInfo {
            node: &n,
            inputs: vec![Some(xd.clone()), Some(fd.clone())],
            const_inputs: consts,
        })
        .unwrap()
    };
    let packed = kernel(vec![None, Some(f.clone())]);
    let plain = kernel(vec![None, None]);
    let (a, b) = (
        packed(&[Some(&x), Some(&f)]).unwrap(),
        plain(&[Some(&x), Some(&f)]).unwrap(),
    );
    assert_eq!(a[0].dtype(), DataType::FLOAT16);
    assert_eq!(a[0].shape(), &[1, 4, 4, 7]);
    assert_eq!(a[0].to_f64_vec(), b[0].to_f64_vec());
    // What is packed: a permutation or a cast, never a plain copy.
    let fpos = [3, 2, 0, 1];
    assert!(pack_filter(&f, &fpos, DataType::FLOAT16).is_some());
    let f32 = f.cast(DataType::FLOAT).unwrap();
    assert!(pack_filter(&f32, &fpos, DataType::FLOAT).is_some());
    assert!(pack_filter(&f32, &[0, 1, 2, 3], DataType::FLOAT).is_none());
    assert!(pack_filter(&f32, &[0, 1, 2, 3], DataType::FLOAT16).is_none());
    assert!(pack_filter(&f32, &[0, 1, 2, 3], DataType::INT8).is_none());
}

#[test]
fn strided_gathers_take_every_s_th_element() {
    for s in 1..5 {
        for len in 0..12usize {
            let src: Vec<u32> = (0..len as u32).collect();
            let want: Vec<u32> = src.iter().copied().step_by(s).collect();
            // dst as long as src reaches, and one shorter (the zip stops early).
            let mut dst = vec![u32::MAX; want.len()];
            gather_strided(&mut dst, &src, s);
            assert_eq!(dst, want, "stride {s}, {len} elements");
            if !want.is_empty() {
                let mut short = vec![u32::MAX; want.len() - 1];
                gather_strided(&mut short, &src, s);
                assert_eq!(short, want[..want.len() - 1], "stride {s}, {len} elements");
            }
        }
    }
}

#[test]
fn tiles_split_into_a_multiple_of_the_threads_of_near_equal_rows() {
    let v = |h: usize, w: usize| {
        Vol::forward(
            [1, h, w],
            [1, 3, 3],
            [1; 3],
            [1; 3],
            [[0, 0], [1, 1], [1, 1]],
        )
        .unwrap()
    };
    // 28 rows of 3x3 columns over 192 channels: L2 tiles of 10 rows (10, 10, 8) on one
    // thread; on two, four tiles of 7.
    let kk = 192 * 9;
    assert_eq!(tile_rows(&v(28, 28), kk, 4, false, 1), 10);
    assert_eq!(tile_rows(&v(28, 28), kk, 4, false, 2), 7);
    // Three threads: three tiles of 10 (already a multiple); 2 threads on 14 rows: 2 of 7.
    assert_eq!(tile_rows(&v(28, 28), kk, 4, false, 3), 10);
    assert_eq!(tile_rows(&v(14, 14), kk, 4, false, 2), 7);
    // Direct 1x1 products: one tile per thread.
    assert_eq!(tile_rows(&v(28, 28), 64, 4, true, 2), 14);
    // Too few pixels to split (7x7 = 49 < 2 x 64): one tile of all rows.
    assert_eq!(tile_rows(&v(7, 7), kk, 4, false, 2), 7);
    // Fewer rows than tiles wanted: one row per tile, never 0.
    assert_eq!(tile_rows(&v(3, 200), kk, 4, false, 4), 1);
    assert_eq!(tile_rows(&v(1, 1), kk, 4, false, 2), 1);
    for (h, w, parts) in [
        (56, 56, 2),
        (112, 112, 2),
        (57, 45, 3),
        (29, 31, 2),
        (3, 70, 2),
    ] {
        let rows = tile_rows(&v(h, w), kk, 4, false, parts);
        let tiles = h.div_ceil(rows);
        assert!(rows >= 1 && rows <= h);
        assert!(
            tiles >= parts.min(h),
            "{h}x{w} on {parts}: {tiles} tiles of {rows}"
        );
    }
}

/// The unfolding by definition: col[(c * k_len + tap) * pix + p] = x at the tap's input of
/// output pixel p of the rows `rows` (0 in the padding).
fn naive_vol2col(xs: &[f64], v: &Vol, cg: usize, rows: Range<usize>) -> Vec<f64> {
    let [id, ih, iw] = v.i;
    let [_, oh, ow] = v.o;
    let pix = rows.len() * ow;
    let mut col = vec![0.0; cg * v.k_len * pix];
    for c in 0..cg {
        let mut t = 0;
        for kd in 0..v.k[0] {
            for kh in 0..v.k[1] {
                for kw in 0..v.k[2] {
                    for (p, row) in rows.clone().enumerate() {
                        let (z, y) = (row / oh, row % oh);
                        for xx in 0..ow {
                            if let Some([iz, iy, ix]) = tap_input(v, [z, y, xx], [kd, kh, kw]) {
                                let at = ((c * id + iz) * ih + iy) * iw + ix;
                                col[(c * v.k_len + t) * pix + p * ow + xx] = xs[at];
                            }
                        }
                    }
                    t += 1;
                }
            }
        }
    }
    col
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// vol2col writes every element of its columns (into a buffer of NaNs) as the definition
    /// does, for any geometry and any band of output rows: strides, dilations, pads larger than
    /// the kernel, 1-pixel images, 3-D.
    #[test]
    fn vol2col_is_the_unfolding_by_definition(
        i in proptest::array::uniform3(1usize..7),
        k in proptest::array::uniform3(1usize..4),
        s in proptest::array::uniform3(1usize..4),
        d in proptest::array::uniform3(1usize..3),
        p in proptest::array::uniform3(proptest::array::uniform2(0usize..5)),
        cg in 1usize..4,
        band in (0usize..64, 1usize..64),
    ) {
        let Ok(v) = Vol::forward(i, k, s, d, p) else {
            return Ok(());
        };
        let all = all_rows(&v).len();
        let start = band.0 % all;
        let rows = start..(start + band.1).min(all);
        let xs: Vec<f64> = (0..cg * v.in_len).map(|j| j as f64 + 1.0).collect();
        let want = naive_vol2col(&xs, &v, cg, rows.clone());
        let mut col = vec![f64::NAN; want.len()];
        vol2col(&xs, &v, cg, rows.clone(), &mut col, 0.0).unwrap();
        proptest::prop_assert_eq!(col, want, "{:?} rows {:?}", v, rows);
    }
}
