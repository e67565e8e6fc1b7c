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

/// A branch graph whose outputs are Data inputs of the given dtypes and shapes (a Relu of each,
/// so the outputs are inferred, not declared).
fn branch(name: &str, outs: &[(DataType, &[i64])]) -> Graph {
    let mut b = es_core::GraphBuilder::new(name);
    for (i, (dt, dims)) in outs.iter().enumerate() {
        let x = b
            .create_input(
                i as i64,
                None,
                "Data",
                *dt,
                Format::ND,
                Shape::new(dims.to_vec()),
            )
            .unwrap();
        let args = es_core::builder::OpArgs {
            inputs: vec![vec![Some(x)]],
            ..Default::default()
        };
        let ty = if *dt == BOOL { "LogicalNot" } else { "Relu" };
        let r = b.add_op(ty, args).unwrap();
        b.set_output(OutPort { node: r, index: 0 }, i).unwrap();
    }
    b.build_and_reset().unwrap()
}

#[test]
fn if_outputs_merge_the_branches_outputs_as_ge_does() {
    let mut t = T::new();
    let c = t.input(BOOL, &[]);
    let a = t.f(&[2]);
    let then_g = branch(
        "then",
        &[
            (FLOAT, &[4, 3]),
            (INT32, &[5, 2]),
            (FLOAT, &[2]),
            (BOOL, &[1]),
        ],
    );
    let else_g = branch(
        "else",
        &[
            (FLOAT, &[4, 3]),
            (INT32, &[7, 2]),
            (FLOAT, &[2, 1]),
            (BOOL, &[U]),
        ],
    );
    let id = t
        .call_full(
            "If",
            &[("cond", &[c]), ("input", &[a])],
            &[],
            &[("output", 4)],
            vec![vec![then_g], vec![else_g]],
        )
        .unwrap();
    // Same: kept; a different dim: -1; a different rank: unknown rank.
    assert_eq!(
        t.outs(id),
        vec![
            (FLOAT, vec![4, 3]),
            (INT32, vec![U, 2]),
            (FLOAT, vec![-2]),
            (BOOL, vec![U])
        ]
    );
    // The branches must agree on the dtypes.
    let e = t
        .call_full(
            "If",
            &[("cond", &[c]), ("input", &[a])],
            &[],
            &[("output", 1)],
            vec![
                vec![branch("then", &[(FLOAT, &[2])])],
                vec![branch("else", &[(INT32, &[2])])],
            ],
        )
        .unwrap_err();
    has(
        &e.to_string(),
        &["output 0", "DT_FLOAT", "DT_INT32", "dtype"],
    );
}

/// A Case of a scalar index and one input, with `n` outputs and the given branches.
fn case(t: &mut T, index_dims: &[i64], n: usize, branches: Vec<Graph>) -> Result<NodeId, Error> {
    let k = t.input(INT32, index_dims);
    let a = t.f(&[2]);
    t.call_full(
        "Case",
        &[("branch_index", &[k]), ("input", &[a])],
        &[],
        &[("output", n)],
        vec![branches],
    )
}

#[test]
fn case_outputs_merge_every_branch_and_reinference_keeps_them() {
    let mut t = T::new();
    let branches = vec![
        branch("b0", &[(FLOAT, &[3, 8])]),
        branch("b1", &[(FLOAT, &[3, 8])]),
        branch("b2", &[(FLOAT, &[3, 9])]),
    ];
    let id = case(&mut t, &[], 1, branches).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT, vec![3, U])]);
    // Re-inference (the compile's) sees the branches too.
    let mut g = t.b.graph().clone();
    *g.node_mut(id).unwrap().outputs[0].desc = TensorDesc::default();
    es_core::infer::infer_graph(&mut g).unwrap();
    let d = &g.node(id).unwrap().outputs[0].desc;
    assert_eq!((d.dtype, d.shape.clone()), (FLOAT, Shape::new(vec![3, U])));
}

#[test]
fn case_outputs_are_unknown_and_index_is_scalar() {
    let mut t = T::new();
    let id = case(&mut t, &[], 2, vec![Graph::new("b0"), Graph::new("b1")]).unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2]); 2]);
    let id = case(&mut t, &[U], 1, vec![Graph::new("b0")]).unwrap();
    assert_eq!(t.outs(id), vec![(UNDEFINED, vec![-2])]);
    let e = case(&mut t, &[2], 1, vec![Graph::new("b0")]).unwrap_err();
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
