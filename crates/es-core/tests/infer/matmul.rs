//! Matrix products: MatMul, BatchMatMul, Gemm, Einsum (`src/infer/matmul.rs`).

use super::*;

#[test]
fn matmul_known_and_transposed() {
    for ty in ["MatMul", "MatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3]), t.f(&[3, 5]));
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (FLOAT, vec![2, 5]),
            "{ty}"
        );
        let (a, c) = (t.f(&[3, 2]), t.f(&[5, 3]));
        let at = [("transpose_x1", b(true)), ("transpose_x2", b(true))];
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &at),
            vec![2, 5],
            "{ty}"
        );
        let (a, c, bias) = (t.f(&[2, 3]), t.f(&[3, 5]), t.f(&[5]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c]), ("bias", &[bias])], &[]),
            vec![2, 5],
            "{ty}"
        );
    }
}

#[test]
fn matmul_unknown() {
    for ty in ["MatMul", "MatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[U, 3]), t.f(&[U, U]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, U],
            "{ty}"
        );
        let (a, c) = (t.f(&[-2]), t.f(&[3, 7]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, 7],
            "{ty}"
        );
    }
}

#[test]
fn matmul_errors() {
    let mut t = T::new();
    let (a, c) = (t.f(&[2, 3]), t.f(&[4, 5]));
    let m = t.err("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]);
    assert_eq!(
        m,
        "MatMulV2 'MatMulV2_0': inner dimensions differ: x1 [2, 3] (k=3) vs x2 [4, 5] (k=4)"
    );
    let (a, c) = (t.f(&[2, 3]), t.f(&[3, 5]));
    t.rejects(
        "MatMul",
        &[("x1", &[a]), ("x2", &[c])],
        &[("transpose_x2", b(true))],
        &["inner dimensions differ", "(k=5)", "transpose_x2=true"],
    );
    let (a3, c) = (t.f(&[2, 2, 3]), t.f(&[3, 5]));
    t.rejects(
        "MatMul",
        &[("x1", &[a3]), ("x2", &[c])],
        &[],
        &["'x1' must be 2-D", "[2, 2, 3]"],
    );
    t.rejects_in(
        "MatMulV2",
        &[("x1", Port(a)), ("x2", Port(c)), ("bias", F(&[4]))],
        &[],
        &["'bias' [4]", "[2, 5]"],
    );
}

#[test]
fn matmul_int8_gives_int32() {
    let mut t = T::new();
    let (a, c) = (t.input(INT8, &[2, 3]), t.input(INT8, &[3, 4]));
    assert_eq!(
        t.ok("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]),
        (INT32, vec![2, 4])
    );
    let (a, c) = (t.input(FLOAT16, &[2, 3]), t.input(FLOAT16, &[3, 4]));
    assert_eq!(
        t.ok("MatMulV2", &[("x1", &[a]), ("x2", &[c])], &[]),
        (FLOAT16, vec![2, 4])
    );
}

#[test]
fn batch_matmul_known() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[4, 5]));
        assert_eq!(
            t.ok(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            (FLOAT, vec![2, 3, 5]),
            "{ty}"
        );
        let (a, c) = (t.f(&[2, 1, 3, 4]), t.f(&[5, 4, 6]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![2, 5, 3, 6],
            "{ty}"
        );
        let (a, c) = (t.f(&[7, 4, 3]), t.f(&[7, 6, 4]));
        let adj = [("adj_x1", b(true)), ("adj_x2", b(true))];
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &adj),
            vec![7, 3, 6],
            "{ty}"
        );
    }
}

#[test]
fn batch_matmul_unknown() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[U, 3, 4]), t.f(&[1, 4, U]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![U, 3, U],
            "{ty}"
        );
        let (a, c) = (t.f(&[-2]), t.f(&[4, 5]));
        assert_eq!(
            t.dims(ty, &[("x1", &[a]), ("x2", &[c])], &[]),
            vec![-2],
            "{ty}"
        );
    }
}

#[test]
fn batch_matmul_errors() {
    for ty in ["BatchMatMul", "BatchMatMulV2"] {
        let mut t = T::new();
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[2, 5, 6]));
        t.rejects(
            ty,
            &[("x1", &[a]), ("x2", &[c])],
            &[],
            &[
                "inner dimensions differ",
                "x1 [2, 3, 4] (k=4)",
                "x2 [2, 5, 6] (k=5)",
            ],
        );
        let (a, c) = (t.f(&[2, 3, 4]), t.f(&[3, 4, 6]));
        t.rejects(
            ty,
            &[("x1", &[a]), ("x2", &[c])],
            &[],
            &["batch dimensions", "cannot be broadcast"],
        );
        let (a, c) = (t.f(&[4]), t.f(&[4, 6]));
        t.rejects(
            ty,
            &[("x1", &[a]), ("x2", &[c])],
            &[],
            &["'x1' must have rank >= 2"],
        );
    }
}

#[test]
fn gemm() {
    let mut t = T::new();
    let (a, bb, c) = (t.f(&[2, 3]), t.f(&[3, 4]), t.f(&[2, 4]));
    let (al, be) = (t.f(&[1]), t.f(&[1]));
    let ins = |a, bb, c| {
        [
            ("a", vec![a]),
            ("b", vec![bb]),
            ("c", vec![c]),
            ("alpha", vec![al]),
            ("beta", vec![be]),
        ]
    };
    let run = |t: &mut T, a, bb, c, attrs: Attrs| {
        let v = ins(a, bb, c);
        let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        t.call("GEMM", &r, attrs)
    };
    let id = run(&mut t, a, bb, c, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 4])]);
    let (at, bt) = (t.f(&[3, 2]), t.f(&[4, 3]));
    let id = run(
        &mut t,
        at,
        bt,
        c,
        &[("transpose_a", b(true)), ("transpose_b", b(true))],
    )
    .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![2, 4])]);
    let (au, cu) = (t.f(&[U, 3]), t.f(&[U, U]));
    let id = run(&mut t, au, bb, cu, &[]).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![U, 4])]);
    let b5 = t.f(&[5, 4]);
    let m = run(&mut t, a, b5, c, &[]).unwrap_err().to_string();
    has(
        &m,
        &[
            "inner dimensions differ",
            "a [2, 3] (k=3)",
            "b [5, 4] (k=5)",
        ],
    );
    let c_bad = t.f(&[3, 4]);
    let m = run(&mut t, a, bb, c_bad, &[]).unwrap_err().to_string();
    has(&m, &["'c' [3, 4]", "[2, 4]"]);
    let al2 = t.f(&[2]);
    let v = [
        ("a", [a]),
        ("b", [bb]),
        ("c", [c]),
        ("alpha", [al2]),
        ("beta", [be]),
    ];
    let r: Vec<(&str, &[OutPort])> = v.iter().map(|(n, p)| (*n, p.as_slice())).collect();
    t.rejects("GEMM", &r, &[], &["'alpha'", "scalar", "[2]"]);
}

#[test]
fn einsum_equations() {
    let mut t = T::new();
    let dims: [&[i64]; 7] = [
        &[2, 3],
        &[3, 4],
        &[5, 2, 3],
        &[2, 3, 4],
        &[U, 3],
        &[-2],
        &[4, 5],
    ];
    let [a23, c34, a523, a234, au3, c_2, c45] = dims.map(|d| t.f(d));
    let eq = |e: &str| [("equation", s(e))];
    t.ok_each(
        "Einsum",
        rows![
            &[("x", &[a23, c34])], &eq("ij,jk->ik") => (FLOAT, &[2, 4]);
            &[("x", &[a23, c34])], &eq("ij,jk") => (FLOAT, &[2, 4]);
            &[("x", &[a523, c34])], &eq("...ij,...jk->...ik") => (FLOAT, &[5, 2, 4]);
            &[("x", &[a234])], &eq("bij -> jb") => (FLOAT, &[4, 2]);
            &[("x", &[au3, c_2])], &eq("ij,jk->ik") => (FLOAT, &[U, U]);
            &[("x", &[c_2])], &eq("...i->...i") => (FLOAT, &[-2]);
        ],
    );
    t.rejects_each(
        "Einsum",
        rows![
            &[("x", &[a23, c45])], &eq("ij,jk->ik") => &["label 'j'", "size 3 and 4"];
            &[("x", &[a23])], &eq("ij,jk->ik") => &["has 2 operands", "1 tensors"];
            &[("x", &[a23])], &eq("ij->iz") => &["output label 'z'"];
        ],
    );
}

#[test]
fn matrix_determinant() {
    let mut t = T::new();
    assert_eq!(
        t.ok_in("MatrixDeterminant", &[("x", F(&[2, 5, 3, 3]))], &[]),
        (FLOAT, vec![2, 5])
    );
    let x = t.input(DOUBLE, &[4, 4]);
    assert_eq!(
        t.ok("MatrixDeterminant", &[("x", &[x])], &[]),
        (DOUBLE, vec![])
    );
    t.dims_each_in(
        "MatrixDeterminant",
        rows![
            &[("x", F(&[U, 3, U]))], &[] => &[U];
            &[("x", F(&[-2]))], &[] => &[-2];
        ],
    );
    let x = t.f(&[2, 3, 4]);
    t.rejects(
        "MatrixDeterminant",
        &[("x", &[x])],
        &[],
        &["square", "3 x 4"],
    );
    t.rejects_in("MatrixDeterminant", &[("x", F(&[3]))], &[], &["rank >= 2"]);
    let x = t.input(INT32, &[3, 3]);
    assert!(t.call("MatrixDeterminant", &[("x", &[x])], &[]).is_err());
}
