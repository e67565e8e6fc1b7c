//! The direct depthwise kernel against a naive sum over the zero-padded input, at every vector
//! level this CPU has, on odd shapes.

use super::*;

/// A deterministic pseudo-random sequence in [-1, 1).
fn seq(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// The depthwise convolution by definition (in f64): y[n, o, z, y, x] = sum over taps of
/// w[o, t] * x[n, o / m, ...], zero outside the input.
fn naive(x: &[f64], f: &[f64], ch: Chans, v: &Vol) -> Vec<f64> {
    let m = ch.o / ch.c;
    let [id, ih, iw] = v.i;
    let [od, oh, ow] = v.o;
    let mut y = vec![0.0; ch.n * ch.o * v.out_len];
    for n in 0..ch.n {
        for o in 0..ch.o {
            let plane = &x[(n * ch.c + o / m) * v.in_len..][..v.in_len];
            for z in 0..od {
                for yy in 0..oh {
                    for xx in 0..ow {
                        let mut s = 0.0;
                        let mut t = 0;
                        for kd in 0..v.k[0] {
                            for kh in 0..v.k[1] {
                                for kw in 0..v.k[2] {
                                    let w = f[o * v.k_len + t];
                                    t += 1;
                                    let iz = (z * v.s[0] + kd * v.d[0]) as i64 - v.p[0] as i64;
                                    let iy = (yy * v.s[1] + kh * v.d[1]) as i64 - v.p[1] as i64;
                                    let ix = (xx * v.s[2] + kw * v.d[2]) as i64 - v.p[2] as i64;
                                    let inside = (0..id as i64).contains(&iz)
                                        && (0..ih as i64).contains(&iy)
                                        && (0..iw as i64).contains(&ix);
                                    let xv = if inside {
                                        plane[((iz as usize) * ih + iy as usize) * iw + ix as usize]
                                    } else {
                                        0.0
                                    };
                                    s += w * xv;
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

/// One case: n images of c channels (multiplier m), input `i`, kernel `k`, strides, dilations,
/// leading and trailing pads. Checks f64, f32 and i64 at every level against [`naive`].
#[allow(clippy::too_many_arguments)]
fn check(
    n: usize,
    c: usize,
    m: usize,
    i: [usize; 3],
    k: [usize; 3],
    s: [usize; 3],
    d: [usize; 3],
    p: [[usize; 2]; 3],
) {
    let v = Vol::forward(i, k, s, d, p).unwrap();
    let ch = Chans {
        n,
        c,
        o: c * m,
        groups: c,
    };
    let seed = (n * 1000 + c * 100 + m * 10 + i[2]) as u64;
    let x = seq(n * c * v.in_len, seed);
    let f = seq(c * m * v.k_len, seed + 1);
    let want = naive(&x, &f, ch, &v);
    let what = format!("n {n} c {c} m {m} i {i:?} k {k:?} s {s:?} d {d:?} p {p:?}");
    for level in levels() {
        for threads in [1, 2] {
            let mut y = vec![f64::NAN; want.len()];
            let done = par::run_with(threads, || depthwise_at(&x, &f, ch, &v, &mut y, level));
            assert!(done.unwrap(), "{what}");
            for (g, w) in y.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-12, "f64 {level:?} {what}: {g} vs {w}");
            }
            let (x32, f32s): (Vec<f32>, Vec<f32>) = (
                x.iter().map(|&v| v as f32).collect(),
                f.iter().map(|&v| v as f32).collect(),
            );
            let mut y32 = vec![f32::NAN; want.len()];
            let done = par::run_with(threads, || {
                depthwise_at(&x32, &f32s, ch, &v, &mut y32, level)
            });
            assert!(done.unwrap(), "{what}");
            for (g, w) in y32.iter().zip(&want) {
                assert!(
                    (f64::from(*g) - w).abs() <= 1e-5 * (1.0 + v.k_len as f64),
                    "f32 {level:?} {what}: {g} vs {w}"
                );
            }
        }
        // Integers (int8 convolutions accumulate in i64): exact.
        let xi: Vec<i64> = x.iter().map(|&v| (v * 100.0) as i64).collect();
        let fi: Vec<i64> = f.iter().map(|&v| (v * 100.0) as i64).collect();
        let wi = naive(
            &xi.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            &fi.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            ch,
            &v,
        );
        let mut yi = vec![i64::MIN; wi.len()];
        assert!(depthwise_at(&xi, &fi, ch, &v, &mut yi, level).unwrap());
        assert_eq!(
            yi,
            wi.iter().map(|&v| v as i64).collect::<Vec<_>>(),
            "i64 {level:?} {what}"
        );
    }
}

/// A 2-D case of [`check`]: square strides and dilations, pads [top, bottom, left, right].
#[allow(clippy::too_many_arguments)]
fn two(
    n: usize,
    c: usize,
    m: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    s: usize,
    dil: usize,
    p: [usize; 4],
) {
    check(
        n,
        c,
        m,
        [1, h, w],
        [1, kh, kw],
        [1, s, s],
        [1, dil, dil],
        [[0, 0], [p[0], p[1]], [p[2], p[3]]],
    );
}

#[test]
fn depthwise_3x3_as_mobile_networks_use_it() {
    // Stride 1 and 2, pads 1, widths not a multiple of the block (16), channels odd.
    for (h, w) in [(7, 7), (14, 14), (17, 33), (56, 56)] {
        for s in [1, 2] {
            two(1, 3, 1, (h, w), (3, 3), s, 1, [1, 1, 1, 1]);
        }
    }
    two(2, 5, 1, (9, 20), (3, 3), 2, 1, [0, 1, 0, 1]);
}

#[test]
fn depthwise_odd_shapes() {
    // A 1-pixel image, with and without padding.
    two(1, 4, 1, (1, 1), (1, 1), 1, 1, [0; 4]);
    two(1, 4, 1, (1, 1), (3, 3), 1, 1, [1, 1, 1, 1]);
    // Padding larger than the kernel; windows wholly in the padding.
    two(1, 2, 1, (3, 4), (2, 2), 1, 1, [3, 4, 5, 3]);
    // Stride larger than the kernel, stride 3, dilation 2 and 3, 5x5 and 1x7 kernels.
    two(1, 3, 1, (11, 13), (2, 2), 3, 1, [0; 4]);
    two(1, 3, 1, (11, 29), (3, 3), 1, 2, [2, 2, 2, 2]);
    two(2, 2, 1, (12, 31), (5, 5), 2, 3, [1, 0, 6, 2]);
    two(1, 3, 1, (5, 40), (1, 7), 1, 1, [0, 0, 3, 3]);
    // Channel multipliers 2 and 3 (each input channel gives m outputs).
    two(2, 3, 2, (6, 18), (3, 3), 1, 1, [1, 1, 1, 1]);
    two(1, 1, 3, (8, 8), (3, 3), 2, 2, [2, 2, 2, 2]);
    // 17 and 19 channels (not a multiple of any vector width), one wide row.
    two(1, 17, 1, (2, 47), (3, 3), 1, 1, [1, 1, 1, 1]);
    two(1, 19, 1, (1, 3), (1, 3), 2, 1, [0, 0, 1, 1]);
}

#[test]
fn depthwise_in_three_dims() {
    check(
        2,
        3,
        1,
        [4, 5, 19],
        [3, 2, 3],
        [2, 1, 2],
        [1, 2, 1],
        [[1, 1], [0, 2], [1, 0]],
    );
    check(
        1,
        2,
        2,
        [1, 1, 1],
        [2, 2, 2],
        [1, 1, 1],
        [1; 3],
        [[1, 0], [0, 1], [1, 1]],
    );
}

#[test]
fn depthwise_splits_large_work_across_threads() {
    // Enough work for par::chunks_for to split (checked), same numbers as one thread.
    let v = Vol::forward(
        [1, 64, 64],
        [1, 3, 3],
        [1; 3],
        [1; 3],
        [[0, 0], [1, 1], [1, 1]],
    )
    .unwrap();
    let ch = Chans {
        n: 1,
        c: 96,
        o: 96,
        groups: 96,
    };
    let work = par::work(ch.o * v.out_len * v.k_len, par::cost::DEPTHWISE_TAP);
    assert!(par::run_with(2, || Ok(par::chunks_for(work))).unwrap() > 1);
    let x: Vec<f32> = seq(ch.c * v.in_len, 7).iter().map(|&v| v as f32).collect();
    let f: Vec<f32> = seq(ch.o * v.k_len, 8).iter().map(|&v| v as f32).collect();
    let mut one = vec![0.0f32; ch.o * v.out_len];
    let mut two = vec![1.0f32; ch.o * v.out_len];
    assert!(depthwise(&x, &f, ch, &v, &mut one).unwrap());
    assert!(par::run_with(2, || depthwise(&x, &f, ch, &v, &mut two)).unwrap());
    assert_eq!(one, two);
}

#[test]
fn other_types_are_left_to_the_engine() {
    let v = Vol::forward([1, 2, 2], [1; 3], [1; 3], [1; 3], [[0; 2]; 3]).unwrap();
    let ch = Chans {
        n: 1,
        c: 1,
        o: 1,
        groups: 1,
    };
    let mut y = [0i32; 4];
    assert!(!depthwise(&[1i32; 4], &[2], ch, &v, &mut y).unwrap());
    let bad = Chans {
        groups: 2,
        c: 4,
        ..ch
    };
    assert!(depthwise(&[1.0f32; 4], &[2.0], bad, &v, &mut [0.0; 4]).is_err());
}
