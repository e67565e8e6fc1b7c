//! HCCL collectives: HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast
//! (`src/infer/collective.rs`).

use super::*;

#[test]
fn all_reduce_keeps_x_and_checks_the_reduction() {
    let mut t = T::new();
    let x = t.input(INT64, &[4, U]);
    let attrs = &[("reduction", s("sum")), ("group", s("hccl_world_group"))];
    assert_eq!(
        t.ok("HcomAllReduce", &[("x", &[x])], attrs),
        (INT64, vec![4, U])
    );
    let bad = &[("reduction", s("mean")), ("group", s("g"))];
    t.rejects(
        "HcomAllReduce",
        &[("x", &[x])],
        bad,
        &["attribute 'reduction' is \"mean\"", "sum, prod, max, min"],
    );
}

#[test]
fn all_gather_multiplies_and_reduce_scatter_divides_dim0() {
    let mut t = T::new();
    let x = t.input(INT8, &[4, 512]);
    let g = |n: i64| vec![("rank_size", i(n)), ("group", s("hccl_world_group"))];
    assert_eq!(
        t.ok("HcomAllGather", &[("x", &[x])], &g(2)),
        (INT8, vec![8, 512])
    );
    assert_eq!(
        t.dims_in("HcomAllGather", &[("x", Typed(INT8, &[U, 2]))], &g(3)),
        vec![U, 2]
    );
    t.rejects(
        "HcomAllGather",
        &[("x", &[x])],
        &g(0),
        &["attribute 'rank_size' is 0"],
    );
    let y = t.f(&[8, 3]);
    let rs = |n: i64| {
        vec![
            ("reduction", s("sum")),
            ("group", s("hccl_world_group")),
            ("rank_size", i(n)),
        ]
    };
    assert_eq!(
        t.ok("HcomReduceScatter", &[("x", &[y])], &rs(2)),
        (FLOAT, vec![4, 3])
    );
    t.rejects(
        "HcomReduceScatter",
        &[("x", &[y])],
        &rs(3),
        &["dim 0 of input 'x' [8, 3] is not divisible by attribute 'rank_size' 3"],
    );
    t.rejects_in(
        "HcomAllGather",
        &[("x", F(&[]))],
        &g(1),
        &["must have at least one dim"],
    );
}

#[test]
fn broadcast_gives_one_output_per_input() {
    let mut t = T::new();
    let a = t.input(FLOAT16, &[2]);
    let b = t.input(INT32, &[3, 1]);
    let id = t
        .call_full(
            "HcomBroadcast",
            &[("x", &[a, b])],
            &[("root_rank", i(0)), ("group", s("g"))],
            &[("y", 2)],
            Vec::new(),
        )
        .unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT16, vec![2]), (INT32, vec![3, 1])]);
    t.rejects(
        "HcomBroadcast",
        &[("x", &[a])],
        &[("root_rank", i(-1)), ("group", s("g"))],
        &["attribute 'root_rank' is -1"],
    );
}
