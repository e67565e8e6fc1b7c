//! Fused transformer operators: DynamicQuant, MoeGatingTopKSoftmax, the flash attentions,
//! GroupedMatmulFinalizeRouting (`src/infer/transformer.rs`).

use super::*;

#[test]
fn dynamic_quant_scale_drops_the_last_dim() {
    let mut t = T::new();
    let x = t.input(FLOAT16, &[4, U, 8]);
    assert_eq!(
        t.all("DynamicQuant", &[("x", &[x])], &[]),
        vec![(INT8, vec![4, U, 8]), (FLOAT, vec![4, U])]
    );
    let s8 = t.input(FLOAT16, &[8]);
    assert_eq!(
        t.all(
            "DynamicQuant",
            &[("x", &[x]), ("smooth_scales", &[s8])],
            &[("dst_type", i(2))]
        )[1],
        (FLOAT, vec![4, U])
    );
    t.rejects(
        "DynamicQuant",
        &[("x", &[x])],
        &[("dst_type", i(0))],
        &["attribute 'dst_type' is DT_FLOAT", "DT_INT8"],
    );
    let gi = t.input(INT32, &[3]);
    t.rejects_each(
        "DynamicQuant",
        rows![
            &[("x", &[x]), ("group_index", &[gi])], &[] => &["input 'group_index' needs input 'smooth_scales'"];
            &[("x", &[x]), ("smooth_scales", &[s8]), ("group_index", &[gi])], &[] => &["input 'smooth_scales' [8] must have shape [3, 8]"];
        ],
    );
    t.rejects_in(
        "DynamicQuant",
        &[("x", Port(x)), ("smooth_scales", Typed(BF16, &[8]))],
        &[],
        &["input 'smooth_scales' is DT_BF16, but x is DT_FLOAT16"],
    );
}

#[test]
fn moe_gating_top_k_softmax_puts_k_last() {
    let mut t = T::new();
    let x = t.input(BF16, &[2, 3, 8]);
    assert_eq!(
        t.all("MoeGatingTopKSoftmax", &[("x", &[x])], &[("k", i(2))]),
        vec![
            (BF16, vec![2, 3, 2]),
            (INT32, vec![2, 3, 2]),
            (INT32, vec![2, 3, 2])
        ]
    );
    t.rejects_each_in(
        "MoeGatingTopKSoftmax",
        rows![
            &[("x", Port(x))], &[("k", i(9))] => &["attribute 'k' is 9; it must be in [1, 8]"];
            &[("x", F(&[1, 2, 3, 4]))], &[("k", i(1))] => &["must be 2-D or 3-D"];
        ],
    );
    assert_eq!(
        t.dims_in("MoeGatingTopKSoftmax", &[("x", F(&[-2]))], &[("k", i(4))]),
        vec![-2]
    );
}

#[test]
fn prompt_flash_attention_follows_ges_shape_rule() {
    let mut t = T::new();
    let q = t.input(FLOAT16, &[2, 5, 8]);
    let k = t.input(FLOAT16, &[2, 7, 4]);
    let v = t.input(FLOAT16, &[2, 7, 4]);
    let ins: Ins = &[("query", &[q]), ("key", &[k]), ("value", &[v])];
    let kv = |n: i64| vec![("num_heads", i(4)), ("num_key_value_heads", i(n))];
    assert_eq!(
        t.ok("PromptFlashAttention", ins, &kv(2)),
        (FLOAT16, vec![2, 5, 8])
    );
    let qs = t.f(&[1]);
    let with_quant: Ins = &[
        ("query", &[q]),
        ("key", &[k]),
        ("value", &[v]),
        ("quant_scale2", &[qs]),
    ];
    assert_eq!(t.ok("PromptFlashAttention", with_quant, &kv(2)).0, INT8);
    let q4 = t.input(BF16, &[1, 2, 3, 4]);
    let v4 = t.input(BF16, &[1, 2, 6, 5]);
    let mut attrs = vec![("num_heads", i(2)), ("input_layout", s("BNSD_BSND"))];
    let ins4: Ins = &[("query", &[q4]), ("key", &[v4]), ("value", &[v4])];
    assert_eq!(
        t.ok("PromptFlashAttention", ins4, &attrs),
        (BF16, vec![1, 3, 2, 5])
    );
    attrs[1] = ("input_layout", s("BSH"));
    t.rejects_each(
        "PromptFlashAttention",
        rows![
            ins4, &attrs => &["input 'query' [1, 2, 3, 4] must be 3-D for input_layout BSH"];
            ins, &kv(3) => &["'num_key_value_heads' 3 must be a positive divisor of num_heads 4"];
        ],
    );
}

#[test]
fn grouped_matmul_finalize_routing_gives_output_bs_rows() {
    let mut t = T::new();
    let x = t.input(INT8, &[8, 16]);
    let w = t.input(INT8, &[4, 16, 32]);
    let sc = t.f(&[4, 32]);
    let ins: Ins = &[("x", &[x]), ("w", &[w]), ("scale", &[sc])];
    assert_eq!(
        t.ok("GroupedMatmulFinalizeRouting", ins, &[("output_bs", i(6))]),
        (FLOAT, vec![6, 32])
    );
    t.rejects_each(
        "GroupedMatmulFinalizeRouting",
        rows![
            ins, &[("output_bs", i(9))] => &["attribute 'output_bs' is 9; it must be in [0, m]"];
            &[("x", &[x]), ("w", &[w])], &[] => &["input 'scale' is not given"];
        ],
    );
    t.rejects_in(
        "GroupedMatmulFinalizeRouting",
        &[
            ("x", Port(x)),
            ("w", Typed(INT8, &[4, 8, 32])),
            ("scale", Port(sc)),
        ],
        &[],
        &["input 'w' [4, 8, 32] must be [e, k, n] with k 16"],
    );
}

#[test]
fn incre_flash_attention_keeps_query_shape() {
    let mut t = T::new();
    let q = t.input(FLOAT16, &[2, 1, 8]);
    let kv = t.input(FLOAT16, &[2, 9, 8]);
    let ins: Ins = &[("query", &[q]), ("key", &[kv]), ("value", &[kv])];
    let attrs = &[("num_heads", i(2)), ("num_key_value_heads", i(2))];
    assert_eq!(
        t.ok("IncreFlashAttention", ins, attrs),
        (FLOAT16, vec![2, 1, 8])
    );
    t.rejects_each(
        "IncreFlashAttention",
        rows![
            &[("query", &[q]), ("key", &[kv, kv]), ("value", &[kv])], attrs => &["inputs 'key' (2) and 'value' (1) must be lists of one"];
            ins, &[("num_heads", i(0))] => &["attribute 'num_heads' is 0"];
        ],
    );
}

#[test]
fn fused_infer_attention_score_follows_ges_shape_rule() {
    let mut t = T::new();
    const FIA: &str = "FusedInferAttentionScore";
    let q = t.input(FLOAT16, &[2, 5, 8]);
    let k = t.input(FLOAT16, &[2, 7, 4]);
    let v = t.input(FLOAT16, &[2, 7, 2]);
    let ins: Ins = &[("query", &[q]), ("key", &[k]), ("value", &[v])];
    let heads = vec![("num_heads", i(4)), ("num_key_value_heads", i(2))];
    // BSH: value's hidden size per key/value head times num_heads; no softmax_lse: [0].
    assert_eq!(
        t.all(FIA, ins, &heads),
        vec![(FLOAT16, vec![2, 5, 4]), (FLOAT, vec![0])]
    );
    let mut lse = heads.clone();
    lse.push(("softmax_lse_flag", b(true)));
    assert_eq!(t.all(FIA, ins, &lse)[1], (FLOAT, vec![2, 4, 5, 1]));
    // A value of unknown hidden size: query's shape (GE reads nothing from it).
    let vu = t.input(FLOAT16, &[2, 7, U]);
    let insu: Ins = &[("query", &[q]), ("key", &[k]), ("value", &[vu])];
    assert_eq!(t.ok(FIA, insu, &heads), (FLOAT16, vec![2, 5, 8]));
    // BNSD_BSND transposes; int8 with quant_scale2.
    let q4 = t.input(BF16, &[1, 2, 3, 4]);
    let v4 = t.input(BF16, &[1, 2, 6, 5]);
    let qs = t.f(&[1]);
    let ins4: Ins = &[
        ("query", &[q4]),
        ("key", &[v4]),
        ("value", &[v4]),
        ("quant_scale2", &[qs]),
    ];
    let attrs = [
        ("num_heads", i(2)),
        ("input_layout", s("BNSD_BSND")),
        ("softmax_lse_flag", b(true)),
    ];
    assert_eq!(
        t.all(FIA, ins4, &attrs),
        vec![(INT8, vec![1, 3, 2, 5]), (FLOAT, vec![1, 2, 3, 1])]
    );
    // The output-layout forms permute query's shape.
    let ins4: Ins = &[("query", &[q4]), ("key", &[v4]), ("value", &[v4])];
    for (layout, want) in [
        ("BNSD", vec![1, 2, 3, 5]),
        ("BSND", vec![1, 2, 3, 5]),
        ("BNSD_NBSD", vec![2, 1, 3, 4]),
        ("BSND_NBSD", vec![3, 1, 2, 4]),
    ] {
        let a = [("num_heads", i(2)), ("input_layout", s(layout))];
        assert_eq!(t.ok(FIA, ins4, &a), (BF16, want), "{layout}");
    }
    let bsnd = [
        ("num_heads", i(3)),
        ("input_layout", s("BSND")),
        ("softmax_lse_flag", b(true)),
    ];
    assert_eq!(t.all(FIA, ins4, &bsnd)[1], (FLOAT, vec![1, 3, 2, 1]));
    let a = [("num_heads", i(2)), ("input_layout", s("BSH_NBSD"))];
    assert_eq!(t.ok(FIA, ins, &a), (FLOAT16, vec![2, 2, 5, 4]));
    // TND: [T, N, D] with value's D; softmax_lse [T, N, 1].
    let tq = t.input(FLOAT16, &[6, 2, 4]);
    let tv = t.input(FLOAT16, &[9, 2, 3]);
    let tins: Ins = &[("query", &[tq]), ("key", &[tv]), ("value", &[tv])];
    let a = [
        ("num_heads", i(2)),
        ("input_layout", s("TND")),
        ("softmax_lse_flag", b(true)),
    ];
    assert_eq!(
        t.all(FIA, tins, &a),
        vec![(FLOAT16, vec![6, 2, 3]), (FLOAT, vec![6, 2, 1])]
    );
    let a = [("num_heads", i(2)), ("input_layout", s("NTD_TND"))];
    assert_eq!(t.ok(FIA, tins, &a), (FLOAT16, vec![2, 6, 3]));
    // Page attention: value [blocks, block_size, H] gives H / num_key_value_heads per head.
    let bt = t.input(INT32, &[2, 4]);
    let pv = t.input(FLOAT16, &[10, 16, 8]);
    let pins: Ins = &[
        ("query", &[q4]),
        ("key", &[pv]),
        ("value", &[pv]),
        ("block_table", &[bt]),
    ];
    let a = [
        ("num_heads", i(2)),
        ("num_key_value_heads", i(2)),
        ("input_layout", s("BNSD")),
    ];
    assert_eq!(t.ok(FIA, pins, &a).1, vec![1, 2, 3, 4]);
    // An int8 query gives float16 (query_rope's dtype when given).
    let q8 = t.input(INT8, &[2, 5, 8]);
    let qr = t.input(BF16, &[2, 5, 2]);
    let ins8: Ins = &[("query", &[q8]), ("key", &[k]), ("value", &[v])];
    assert_eq!(t.ok(FIA, ins8, &heads).0, FLOAT16);
    let ins8r: Ins = &[
        ("query", &[q8]),
        ("key", &[k]),
        ("value", &[v]),
        ("query_rope", &[qr]),
    ];
    assert_eq!(t.ok(FIA, ins8r, &heads).0, BF16);
    // Unknown rank: both outputs unknown.
    let qr2 = t.input(FLOAT16, &[-2]);
    let insr: Ins = &[("query", &[qr2]), ("key", &[k]), ("value", &[v])];
    assert_eq!(
        t.all(FIA, insr, &heads),
        vec![(FLOAT16, vec![-2]), (FLOAT, vec![-2])]
    );
}

#[test]
fn fused_infer_attention_score_rejects_what_ges_rule_rejects() {
    let mut t = T::new();
    const FIA: &str = "FusedInferAttentionScore";
    let q = t.input(FLOAT16, &[2, 5, 8]);
    let v = t.input(FLOAT16, &[2, 7, 8]);
    let v4 = t.input(FLOAT16, &[2, 2, 7, 4]);
    let ins: Ins = &[("query", &[q]), ("key", &[v]), ("value", &[v])];
    let n2 = [("num_heads", i(2))];
    t.rejects_each(
        FIA,
        rows![
            ins, &[("num_heads", i(0))] => &["attribute 'num_heads' is 0; it must be at least 1"];
            ins, &[("num_heads", i(4)), ("num_key_value_heads", i(3))] => &["'num_key_value_heads' 3 must be a positive divisor of num_heads 4"];
            ins, &[("num_heads", i(2)), ("input_layout", s("XYZ"))] => &["attribute 'input_layout' is \"XYZ\"; expected one of BSH"];
            ins, &[("num_heads", i(2)), ("input_layout", s("BNSD"))] => &["input 'query' [2, 5, 8] must be 4-D for input_layout BNSD"];
        ],
    );
    let bad: Ins = &[("query", &[q]), ("key", &[v4]), ("value", &[v4])];
    t.rejects(
        FIA,
        bad,
        &n2,
        &["input 'value' [2, 2, 7, 4] must be 3-D for input_layout BSH"],
    );
    let bt = t.input(INT32, &[2, 4]);
    let paged: Ins = &[
        ("query", &[q]),
        ("key", &[v4]),
        ("value", &[v4]),
        ("block_table", &[bt]),
    ];
    t.rejects_each(
        FIA,
        rows![
            paged, &n2 => &["input 'value' [2, 2, 7, 4] must be 3-D or 5-D for input_layout BSH with block_table"];
            &[("query", &[q]), ("key", &[v, v]), ("value", &[v])], &n2 => &["inputs 'key' (2) and 'value' (1) must be lists of one, non-zero length"];
        ],
    );
}
