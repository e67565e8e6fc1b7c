//! Property tests: random graphs, attribute values and edge edits.

use super::*;

/// One op of a random DAG: kind (0 Add, 1 Relu, 2 Mul, 3 ConcatD), operand picks, concat axis,
/// and an optional control edge back to an earlier op.
#[derive(Debug, Clone)]
struct OpSpec {
    kind: u8,
    picks: Vec<usize>,
    axis: i64,
    ctl: Option<usize>,
}

fn op_spec() -> impl Strategy<Value = OpSpec> {
    (
        0u8..4,
        prop::collection::vec(any::<usize>(), 1..4),
        prop_oneof![4 => Just(0i64), 1 => Just(1i64)],
        prop::option::of(any::<usize>()),
    )
        .prop_map(|(kind, picks, axis, ctl)| OpSpec {
            kind,
            picks,
            axis,
            ctl,
        })
}

/// Builds the DAG; add_op failures (concat on axis 1 changes shapes, so later broadcasts can
/// fail) must leave the graph unchanged.
fn build_dag(n_inputs: usize, ops: &[OpSpec], n_outputs: usize) -> Graph {
    let mut b = GraphBuilder::new("dag");
    let mut pool: Vec<OutPort> = (0..n_inputs)
        .map(|i| data(&mut b, i as i64, &[UNKNOWN_DIM, 3]))
        .collect();
    let mut made: Vec<NodeId> = Vec::new();
    for op in ops {
        let pick = |k: usize| pool[op.picks[k % op.picks.len()] % pool.len()];
        let (ty, a) = match op.kind {
            0 => ("Add", args(vec![one(pick(0)), one(pick(1))], &[])),
            1 => ("Relu", args(vec![one(pick(0))], &[])),
            2 => ("Mul", args(vec![one(pick(0)), one(pick(1))], &[])),
            _ => (
                "ConcatD",
                args(
                    vec![(0..op.picks.len()).map(|k| Some(pick(k))).collect()],
                    &[("concat_dim", ints(op.axis))],
                ),
            ),
        };
        let before = b.graph().node_count();
        match b.add_op(ty, a) {
            Ok(id) => {
                if let (Some(c), false) = (op.ctl, made.is_empty()) {
                    b.add_control_dependency(id, &[made[c % made.len()]])
                        .unwrap();
                }
                made.push(id);
                pool.push(out0(id));
            }
            Err(_) => assert_eq!(b.graph().node_count(), before),
        }
    }
    for k in 0..n_outputs {
        let p = pool[pool.len() - 1 - (k % pool.len())];
        b.set_output(p, k).unwrap();
    }
    b.build_and_reset()
        .expect("a DAG built by the builder validates")
}

fn finite_or_special_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => prop::num::f32::NORMAL | prop::num::f32::SUBNORMAL | prop::num::f32::ZERO,
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(f32::NAN),
    ]
}

fn dtype_strategy() -> impl Strategy<Value = DataType> {
    prop::sample::select(all_dtypes())
}

/// Tensors whose JSON form parses back exactly (integers within 2^24; see `sample_tensors`).
fn tensor_strategy() -> impl Strategy<Value = Tensor> {
    prop_oneof![
        prop::collection::vec(finite_or_special_f32(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(-(1i32 << 24)..=(1 << 24), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(-(1i64 << 24)..=(1 << 24), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![1, v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(any::<u8>(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        prop::collection::vec(any::<bool>(), 0..6).prop_map(|v| Tensor::from_values(
            &v,
            vec![v.len() as i64]
        )
        .unwrap()),
        any::<i16>().prop_map(Tensor::scalar),
    ]
}

fn attr_strategy() -> impl Strategy<Value = AttrValue> {
    let s = || "[a-zA-Z0-9 _\\-\"\\\\é]{0,12}";
    prop_oneof![
        any::<i64>().prop_map(AttrValue::Int),
        finite_or_special_f32().prop_map(AttrValue::Float),
        s().prop_map(AttrValue::String),
        any::<bool>().prop_map(AttrValue::Bool),
        dtype_strategy().prop_map(AttrValue::Type),
        prop::collection::vec(any::<i64>(), 0..6).prop_map(AttrValue::ListInt),
        prop::collection::vec(finite_or_special_f32(), 0..6).prop_map(AttrValue::ListFloat),
        prop::collection::vec(any::<bool>(), 0..6).prop_map(AttrValue::ListBool),
        prop::collection::vec(dtype_strategy(), 0..6).prop_map(AttrValue::ListType),
        prop::collection::vec(prop::collection::vec(any::<i64>(), 0..4), 0..4)
            .prop_map(AttrValue::ListListInt),
        tensor_strategy().prop_map(AttrValue::Tensor),
        prop::collection::vec(s(), 0..4).prop_map(AttrValue::ListString),
    ]
}

fn small_graph_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| to_bytes(&small_graph()).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_random_dag_round_trips_and_orders(
        n_inputs in 1usize..4,
        ops in prop::collection::vec(op_spec(), 1..16),
        n_outputs in 1usize..3,
    ) {
        let g = build_dag(n_inputs, &ops, n_outputs);
        let bytes = to_bytes(&g).unwrap();
        let back = from_bytes(&bytes).unwrap();
        prop_assert!(back == g);
        prop_assert_eq!(to_bytes(&back).unwrap(), bytes);
        for graph in [&g, &back] {
            let order = graph.topo_order().unwrap();
            prop_assert_eq!(order.len(), graph.node_count());
            let pos: HashMap<NodeId, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            for &id in &order {
                let n = graph.node(id).unwrap();
                for inp in &n.inputs {
                    if let Some(src) = inp.source {
                        prop_assert!(pos[&src.node] < pos[&id], "data edge {:?} -> {:?}", src.node, id);
                    }
                }
                for c in &n.in_control {
                    prop_assert!(pos[c] < pos[&id]);
                }
            }
            // Stable: with the creation order as tie-break, a graph whose edges all go forward
            // in creation order is ordered exactly in creation order.
            prop_assert_eq!(order, graph.nodes());
        }
        prop_assert_eq!(dump::txt(&back), dump::txt(&g));
    }

    #[test]
    fn prop_byte_corruption_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut b = small_graph_bytes().to_vec();
        for (i, v) in &edits {
            let k = i.index(b.len());
            b[k] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        let r = load_no_panic(&b);
        prop_assert!(r.is_ok(), "panicked: {:?}", r);
    }

    #[test]
    fn prop_attr_json_round_trip(a in attr_strategy()) {
        let j = a.to_json();
        let back = AttrValue::from_json(a.attr_type(), &j).unwrap();
        prop_assert_eq!(&back, &a);
        let text = serde_json::to_string(&j).unwrap();
        let back2 = AttrValue::from_json(a.attr_type(), &serde_json::from_str(&text).unwrap()).unwrap();
        prop_assert_eq!(&back2, &a);
        prop_assert!(back.approx_eq(&a));
    }

    #[test]
    fn prop_attrs_survive_graph_files_bit_exact(
        bits in prop::collection::vec(any::<u32>(), 1..5),
        a in attr_strategy(),
    ) {
        // Any f32 bit pattern (NaN payloads included) survives the binary file format.
        let mut g = small_graph();
        let id = g.find("Relu_0").unwrap();
        let floats: Vec<f32> = bits.iter().map(|b| f32::from_bits(*b)).collect();
        g.node_mut(id).unwrap().private_attrs.insert("_bits".into(), AttrValue::ListFloat(floats));
        g.node_mut(id).unwrap().attrs.insert("_any".into(), a);
        let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
        prop_assert!(back == g);
    }
}

/// One step of [`prop_edge_edits_keep_consumer_lists_exact`].
#[derive(Debug, Clone)]
enum EdgeEdit {
    Connect(usize, usize, usize),
    Disconnect(usize),
    RemoveNode(usize),
    RemoveNodes(Vec<usize>),
}

fn edge_edit() -> impl Strategy<Value = EdgeEdit> {
    prop_oneof![
        4 => (0usize..8, 0usize..8, 0usize..3).prop_map(|(a, b, i)| EdgeEdit::Connect(a, b, i)),
        2 => (0usize..64).prop_map(EdgeEdit::Disconnect),
        1 => (0usize..8).prop_map(EdgeEdit::RemoveNode),
        1 => prop::collection::vec(0usize..8, 1..4).prop_map(EdgeEdit::RemoveNodes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Edges removed in O(1) by their recorded place: after any sequence of connects,
    /// disconnects and node removals, every consumer list holds exactly the live edges into it
    /// and every input knows its place (`check_integrity`), and a save/load round trip agrees.
    #[test]
    fn prop_edge_edits_keep_consumer_lists_exact(edits in prop::collection::vec(edge_edit(), 1..40)) {
        let mut g = Graph::new("edits");
        let ids: Vec<NodeId> = (0..8)
            .map(|k| g.add_node(raw_node(&format!("n{k}"), "Op", 3, 1)).unwrap())
            .collect();
        // (consumer node index, input) -> producer node index: the reference edge set.
        let mut edges: HashMap<(usize, usize), usize> = HashMap::new();
        let mut alive = [true; 8];
        for e in edits {
            match e {
                EdgeEdit::Connect(a, b, i) => {
                    if a != b && alive[a] && alive[b] && !edges.contains_key(&(b, i)) {
                        g.add_data_edge(out0(ids[a]), in_port(ids[b], i as u32)).unwrap();
                        edges.insert((b, i), a);
                    }
                }
                EdgeEdit::Disconnect(k) => {
                    let mut keys: Vec<_> = edges.keys().copied().collect();
                    keys.sort();
                    if !keys.is_empty() {
                        let (b, i) = keys[k % keys.len()];
                        let a = edges.remove(&(b, i)).unwrap();
                        g.remove_data_edge(out0(ids[a]), in_port(ids[b], i as u32)).unwrap();
                    }
                }
                EdgeEdit::RemoveNode(a) => {
                    if alive[a] {
                        g.remove_node(ids[a]).unwrap();
                        alive[a] = false;
                        edges.retain(|&(b, _), p| b != a && *p != a);
                    }
                }
                EdgeEdit::RemoveNodes(list) => {
                    let mut set: Vec<usize> = list.into_iter().filter(|&a| alive[a]).collect();
                    set.sort();
                    set.dedup();
                    let batch: Vec<NodeId> = set.iter().map(|&a| ids[a]).collect();
                    g.remove_nodes(&batch).unwrap();
                    for &a in &set {
                        alive[a] = false;
                    }
                    edges.retain(|&(b, _), p| !set.contains(&b) && !set.contains(p));
                }
            }
            g.check_integrity().unwrap();
            for (a, &id) in ids.iter().enumerate().filter(|(a, _)| alive[*a]) {
                let mut got: Vec<(usize, u32)> = g.node(id).unwrap().outputs[0]
                    .consumers
                    .iter()
                    .map(|c| (ids.iter().position(|&x| x == c.node).unwrap(), c.index))
                    .collect();
                got.sort();
                let mut want: Vec<(usize, u32)> = edges
                    .iter()
                    .filter(|(_, &p)| p == a)
                    .map(|(&(b, i), _)| (b, i as u32))
                    .collect();
                want.sort();
                prop_assert_eq!(got, want);
            }
        }
        let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
        prop_assert!(back == g);
    }
}
