//! Control flow: If, Case, While (`src/infer/control.rs`).

use super::*;

#[test]
fn if_outputs_are_unknown() {
    let mut t = T::new();
    let c = t.input(BOOL, &[]);
    let (a, d) = (t.f(&[2, 3]), t.input(INT32, &[U]));
    let id = t
        .call_full(
            "If",
            &[("cond", &[c]), ("input", &[a, d])],
            &[],
            &[("output", 3)],
            vec![vec![Graph::new("then")], vec![Graph::new("else")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2]); 3]);
}

#[test]
fn case_outputs_are_unknown_and_index_is_scalar() {
    let mut t = T::new();
    let k = t.input(INT32, &[]);
    let a = t.f(&[2]);
    let id = t
        .call_full(
            "Case",
            &[("branch_index", &[k]), ("input", &[a])],
            &[],
            &[("output", 2)],
            vec![vec![Graph::new("b0"), Graph::new("b1")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2]); 2]);
    let ku = t.input(INT32, &[U]);
    let id = t
        .call_full(
            "Case",
            &[("branch_index", &[ku]), ("input", &[a])],
            &[],
            &[("output", 1)],
            vec![vec![Graph::new("b0")]],
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2])]);
    let k2 = t.input(INT32, &[2]);
    let e = t
        .call_full(
            "Case",
            &[("branch_index", &[k2]), ("input", &[a])],
            &[],
            &[("output", 1)],
            vec![vec![Graph::new("b0")]],
        )
        .unwrap_err();
    has(&e.to_string(), &["'branch_index'", "scalar", "[2]"]);
}

#[test]
fn while_outputs_are_its_inputs() {
    let mut t = T::new();
    let (a, d) = (t.f(&[2, 3]), t.input(INT32, &[U]));
    let r = t.input(BOOL, &[-2]);
    let sub = || vec![vec![Graph::new("cond")], vec![Graph::new("body")]];
    let id = t
        .call_full(
            "While",
            &[("input", &[a, d, r])],
            &[],
            &[("output", 3)],
            sub(),
        )
        .unwrap();
    assert_eq!(
        t.outs(id),
        vec![(FLOAT, vec![2, 3]), (INT32, vec![U]), (BOOL, vec![-2])]
    );
    let e = t
        .call_full("While", &[("input", &[a, d])], &[], &[("output", 3)], sub())
        .unwrap_err();
    assert!(matches!(e, Error::ShapeInference(_)));
    has(&e.to_string(), &["While 'While_", "2 inputs, 3 outputs"]);
}
