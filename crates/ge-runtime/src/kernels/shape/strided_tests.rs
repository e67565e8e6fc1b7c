use super::*;
use crate::kernels::common::take_value;
use ndarray::IxDyn;

fn iota(dims: &[usize]) -> ArrayD<f32> {
    let n: usize = dims.iter().product();
    ArrayD::from_shape_vec(IxDyn(dims), (0..n).map(|i| i as f32).collect()).unwrap()
}

/// Every permutation of `0..r`.
fn perms(r: usize) -> Vec<Vec<usize>> {
    if r == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in perms(r - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, r - 1);
            out.push(q);
        }
    }
    out
}

#[test]
fn permuted_copies_match_ndarray_on_odd_shapes() {
    for dims in [
        vec![1],
        vec![3, 1],
        vec![1, 2, 3, 5],
        vec![2, 3, 1, 7],
        vec![1, 2, 3, 4, 5],
        vec![2, 1, 1, 17],
    ] {
        let a = iota(&dims);
        for perm in perms(dims.len()) {
            let want = a
                .view()
                .permuted_axes(IxDyn(&perm))
                .as_standard_layout()
                .into_owned();
            let x = Value::F32(a.clone());
            let got = View::permuted(&dims, &perm)
                .unwrap()
                .take_value(&x)
                .unwrap()
                .unwrap();
            assert_eq!(got, Value::F32(want), "dims {dims:?} perm {perm:?}");
        }
    }
}

#[test]
fn regular_maps_match_take_axes_and_irregular_ones_fall_back() {
    let dims = [3usize, 4, 5];
    let x = Value::F32(iota(&dims));
    let prog = |first: usize, step: isize, n: usize| -> Vec<Option<usize>> {
        (0..n)
            .map(|j| Some((first as isize + j as isize * step) as usize))
            .collect()
    };
    let cases: Vec<Maps> = vec![
        vec![prog(0, 1, 3), prog(1, 2, 2), prog(4, -1, 5)],
        vec![prog(2, -2, 2), prog(0, 1, 4), prog(0, 3, 2)],
        vec![prog(1, 1, 1), prog(3, -3, 2), prog(2, 1, 3)],
        vec![prog(0, 1, 0), prog(0, 1, 4), prog(0, 1, 5)],
        vec![prog(0, 1, 3), prog(0, 1, 4), prog(0, 1, 5)],
    ];
    for maps in &cases {
        let v = View::of_maps(&dims, maps).expect("a regular map");
        let got = v.take_value(&x).unwrap().unwrap();
        assert_eq!(got, take_value(&x, maps, None).unwrap(), "{maps:?}");
        assert_eq!(take(&x, maps).unwrap(), got);
    }
    // Irregular, a fill value, out of range: not a view; take() gives take_value's answer.
    let irregular: Maps = vec![vec![Some(0), Some(2), Some(1)], full(4), full(5)];
    let fill: Maps = vec![vec![Some(0), None], full(4), full(5)];
    let out: Maps = vec![vec![Some(3)], full(4), full(5)];
    assert!(View::of_maps(&dims, &irregular).is_none());
    assert!(View::of_maps(&dims, &fill).is_none());
    assert!(View::of_maps(&dims, &out).is_none());
    assert_eq!(
        take(&x, &irregular).unwrap(),
        take_value(&x, &irregular, None).unwrap()
    );
    assert!(take(&x, &out).is_err());
    // Strings keep the generic path.
    let s = Value::Str(ArrayD::from_elem(IxDyn(&[2, 2]), "a".to_string()));
    assert!(View::permuted(&[2, 2], &[1, 0])
        .unwrap()
        .take_value(&s)
        .is_none());
}

fn full(d: usize) -> Vec<Option<usize>> {
    (0..d).map(Some).collect()
}

#[test]
fn contiguous_neighbours_merge_into_long_rows() {
    // The channel shuffle: [1, 2, 3, 4, 5] -> perm [0, 2, 1, 3, 4] is 3 x 2 rows of 20.
    let v = View::permuted(&[1, 2, 3, 4, 5], &[0, 2, 1, 3, 4])
        .unwrap()
        .simplified();
    assert_eq!((v.dims, v.strides), (vec![3, 2, 20], vec![20, 60, 1]));
    // A channel range of [1, 8, 4, 4] is one block.
    let maps: Maps = vec![full(1), (2..6).map(Some).collect(), full(4), full(4)];
    let v = View::of_maps(&[1, 8, 4, 4], &maps).unwrap().simplified();
    assert_eq!((v.base, v.dims, v.strides), (32, vec![64], vec![1]));
}

#[test]
fn one_and_two_threads_copy_the_same() {
    // Large enough to split (checked), with rows that are not a multiple of a vector width.
    let dims = [3usize, 67, 71, 29];
    let a = iota(&dims);
    assert!(par::run_with(2, || Ok(par::chunks_for(a.len()))).unwrap() > 1);
    let x = Value::F32(a);
    for perm in [[0, 2, 1, 3], [3, 1, 2, 0], [0, 1, 3, 2]] {
        let v = View::permuted(&dims, &perm).unwrap();
        let one = v.take_value(&x).unwrap().unwrap();
        let two = par::run_with(2, || v.take_value(&x).unwrap()).unwrap();
        assert_eq!(one, two, "perm {perm:?}");
    }
    let maps: Maps = vec![
        full(3),
        (0..67).rev().map(Some).collect(),
        (1..71).step_by(3).map(Some).collect(),
        full(29),
    ];
    let one = take(&x, &maps).unwrap();
    let two = par::run_with(2, || take(&x, &maps)).unwrap();
    assert_eq!(one, two);
    assert_eq!(one, take_value(&x, &maps, None).unwrap());
}

#[test]
fn other_dtypes_and_views_outside_the_source_are_errors() {
    let x =
        Value::I64(ndarray::Array::from_shape_vec(IxDyn(&[2, 3]), vec![1, 2, 3, 4, 5, 6]).unwrap());
    let t = View::permuted(&[2, 3], &[1, 0])
        .unwrap()
        .take_value(&x)
        .unwrap()
        .unwrap();
    assert_eq!(t.to_i64_vec(), vec![1, 4, 2, 5, 3, 6]);
    let bad = View {
        base: 4,
        dims: vec![2, 2],
        strides: vec![1, 3],
    };
    assert!(bad.copy_into(&[0f32; 6], &mut [0f32; 4]).is_err());
}

#[test]
fn one_contiguous_run_splits_into_pieces_with_the_same_bits() {
    // A Slice of the outermost axis is one run: it splits by pieces (checked), at an odd base
    // and length, and gives the same values at 1, 2 and 3 threads.
    let dims = [1usize, 1101, 23, 23];
    let x = Value::F32(iota(&dims));
    let maps: Maps = vec![full(1), (1..1101).map(Some).collect(), full(23), full(23)];
    let v = View::of_maps(&dims, &maps).unwrap().simplified();
    assert_eq!(v.dims.len(), 1);
    let work = par::work(v.len(), par::cost::ELEMENT);
    assert!(par::run_with(2, || Ok(par::chunks_for(work))).unwrap() > 1);
    let want = take_value(&x, &maps, None).unwrap();
    for n in [1, 2, 3] {
        assert_eq!(
            par::run_with(n, || take(&x, &maps)).unwrap(),
            want,
            "{n} threads"
        );
    }
    // A one-element run and a run that ends at the source's end.
    let maps: Maps = vec![full(1), vec![Some(1100)], vec![Some(22)], vec![Some(22)]];
    assert_eq!(
        par::run_with(2, || take(&x, &maps)).unwrap(),
        take_value(&x, &maps, None).unwrap()
    );
}
