//! HCCL collectives: HcomAllReduce, HcomAllGather, HcomReduceScatter, HcomBroadcast,
//! HcomAllToAllV, HcomSend, HcomReceive
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

#[test]
fn all_to_all_v_is_1d_known_from_constant_receive_counts() {
    let mut t = T::new();
    let x = t.input(FLOAT16, &[3, 4]);
    let g = &[("group", s("hccl_world_group"))];
    let sc = t.ints64(&[4, 8]);
    let sd = t.ints64(&[0, 4]);
    let rc = t.ints64(&[2, 6]);
    let rd = t.ints64(&[10, 0]);
    let ins = |rc, rd| {
        [
            ("send_data", vec![x]),
            ("send_counts", vec![sc]),
            ("send_displacements", vec![sd]),
            ("recv_counts", vec![rc]),
            ("recv_displacements", vec![rd]),
        ]
    };
    let call = |t: &mut T, i: [(&'static str, Vec<OutPort>); 5]| {
        let r: Vec<(&str, &[OutPort])> = i.iter().map(|(n, v)| (*n, &v[..])).collect();
        t.call("HcomAllToAllV", &r, g)
    };
    // max(10 + 2, 0 + 6) = 12 elements, send_data's dtype.
    let id = call(&mut t, ins(rc, rd)).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT16, vec![12])]);
    let dyn_counts = t.input(INT64, &[2]);
    let id = call(&mut t, ins(dyn_counts, rd)).unwrap();
    assert_eq!(t.outs(id), vec![(FLOAT16, vec![U])]);
    let three = t.ints64(&[1, 1, 1]);
    let e = call(&mut t, ins(three, rd)).unwrap_err().to_string();
    assert!(
        e.contains("one entry per rank each, got lengths 2, 2, 3, 2"),
        "{e}"
    );
    let neg = t.ints64(&[1, -1]);
    let e = call(&mut t, ins(neg, rd)).unwrap_err().to_string();
    assert!(e.contains("input 'recv_counts' holds -1"), "{e}");
}

#[test]
fn receive_has_its_shape_and_dtype_and_send_no_output() {
    let mut t = T::new();
    let attrs = |dims: &[i64], dt| {
        vec![
            ("group", s("hccl_world_group")),
            ("sr_tag", i(3)),
            ("src_rank", i(1)),
            ("shape", li(dims)),
            ("dtype", ty(dt)),
        ]
    };
    assert_eq!(
        t.ok("HcomReceive", &[], &attrs(&[2, 5], INT32)),
        (INT32, vec![2, 5])
    );
    t.rejects("HcomReceive", &[], &attrs(&[2, -1], INT32), &["has dim -1"]);
    t.rejects(
        "HcomReceive",
        &[],
        &attrs(&[2], BOOL),
        &["attribute 'dtype' is DT_BOOL, which output 'y' does not allow"],
    );
    let x = t.f(&[4]);
    let send = |dest| {
        vec![
            ("group", s("hccl_world_group")),
            ("sr_tag", i(3)),
            ("dest_rank", i(dest)),
        ]
    };
    assert_eq!(t.all("HcomSend", &[("x", &[x])], &send(1)), vec![]);
    t.rejects(
        "HcomSend",
        &[("x", &[x])],
        &send(-2),
        &["attribute 'dest_rank' is -2"],
    );
}
