//! The native file format and the text dumps (`es_core::serialize`, `es_core::dump`), including
//! files a hostile writer crafted.

use super::*;

#[test]
fn serialize_round_trip_rich_graph() {
    let g = rich_graph();
    g.validate().unwrap();
    let bytes = to_bytes(&g).unwrap();
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
    let back = from_bytes(&bytes).unwrap();
    assert!(back == g, "round trip differs");
    back.validate().unwrap();
    back.check_integrity().unwrap();
    // Deterministic: saving the loaded graph gives the same bytes.
    assert_eq!(to_bytes(&back).unwrap(), bytes);
    // Subgraphs, control edges, attributes and descs all came back.
    let iff = back.find("branchy").unwrap();
    let n = back.node(iff).unwrap();
    assert_eq!(n.subgraphs.len(), 2);
    assert_eq!(n.subgraphs[0].graph.parent_node.as_deref(), Some("branchy"));
    assert_eq!(n.in_control, vec![back.find("Add_0").unwrap()]);
    assert_eq!(
        back.node(back.find("Add_0").unwrap()).unwrap().out_control,
        vec![iff]
    );
    let mul = back.node(back.find("Mul_0").unwrap()).unwrap();
    assert_eq!(
        mul.private_attrs.get("_nan"),
        Some(&AttrValue::Float(f32::NAN))
    );
    assert!(matches!(mul.private_attrs.get("_nan"), Some(AttrValue::Float(v)) if v.is_nan()));
    assert_eq!(
        mul.outputs[0].desc.attrs.get("_out_attr"),
        Some(&AttrValue::String("tag".into()))
    );
    assert_eq!(mul.outputs[0].desc.format, Format::NCHW);
    assert_eq!(
        names(&back, &back.topo_order().unwrap()),
        names(&g, &g.topo_order().unwrap())
    );
    assert_eq!(dump::txt(&back), dump::txt(&g));
    assert_eq!(dump::readable(&back), dump::readable(&g));
    // The loaded graph is fully usable: its name index works and ids are live.
    let mut back = back;
    let extra = relu(&mut back, "extra", 1);
    back.add_data_edge(
        out0(back.find("Add_0").unwrap()),
        InPort {
            node: extra,
            index: 0,
        },
    )
    .unwrap();
    assert!(
        back.add_node(raw_node("Add_0", "Relu", 0, 1)).is_err(),
        "names reindexed"
    );
    assert!(back != g);
}

#[test]
fn serialize_equality_sees_differences() {
    let g = rich_graph();
    let mut h = g.clone();
    assert!(h == g);
    let id = h.find("Mul_0").unwrap();
    h.node_mut(id)
        .unwrap()
        .private_attrs
        .insert("_nan".into(), AttrValue::Float(1.0));
    assert!(h != g);
    let mut h = g.clone();
    h.node_mut(id).unwrap().outputs[0].desc.attrs.clear();
    assert!(h != g);
    let mut h = g.clone();
    let iff = h.find("branchy").unwrap();
    h.node_mut(iff).unwrap().subgraphs[0]
        .graph
        .attrs
        .insert("x".into(), ints(1));
    assert!(h != g);
    let mut h = g.clone();
    let add = h.find("Add_0").unwrap();
    h.remove_control_edge(add, iff).unwrap();
    assert!(h != g);
    let mut h = g.clone();
    h.outputs.swap(0, 1);
    assert!(h != g);
}

#[test]
fn serialize_round_trip_after_removals() {
    let (mut g, _, b, _) = chain();
    g.remove_node(b).unwrap();
    relu(&mut g, "new", 0);
    let back = from_bytes(&to_bytes(&g).unwrap()).unwrap();
    assert!(back == g);
    assert_eq!(all_names(&back), vec!["a", "c", "new"]);
    // Creation order continues after loading.
    let mut back = back;
    relu(&mut back, "later", 0);
    assert_eq!(all_names(&back), vec!["a", "c", "new", "later"]);
}

#[test]
fn serialize_save_and_load_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.gers");
    let g = rich_graph();
    serialize::save(&g, &path).unwrap();
    let back = serialize::load(&path).unwrap();
    assert!(back == g);
    assert!(matches!(
        serialize::load(&dir.path().join("missing")),
        Err(Error::Serialization(_))
    ));
    std::fs::write(&path, b"GERSGRPH").unwrap();
    assert!(serialize::load(&path).is_err());
}

#[test]
fn from_bytes_rejects_bad_headers() {
    let bytes = to_bytes(&small_graph()).unwrap();
    assert!(from_bytes(&bytes).is_ok());
    assert!(matches!(from_bytes(&[]), Err(Error::Serialization(_))));
    assert!(from_bytes(b"GERSGRPH").is_err());
    let mut bad_magic = bytes.clone();
    bad_magic[0] = b'X';
    assert!(from_bytes(&bad_magic)
        .unwrap_err()
        .to_string()
        .contains("magic"));
    for v in [0u32, FORMAT_VERSION + 1, 255, u32::MAX] {
        let mut b = bytes.clone();
        b[8..12].copy_from_slice(&v.to_le_bytes());
        let e = from_bytes(&b).unwrap_err();
        assert!(
            matches!(e, Error::Serialization(_)) && e.to_string().contains("version"),
            "{v}: {e}"
        );
    }
    let mut trailing_junk = MAGIC.to_vec();
    trailing_junk.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    trailing_junk.extend_from_slice(b"\xc1\xc1\xc1");
    assert!(from_bytes(&trailing_junk).is_err());
}

#[test]
fn from_bytes_every_truncation_is_an_error() {
    let bytes = to_bytes(&small_graph()).unwrap();
    for len in 0..bytes.len() {
        match load_no_panic(&bytes[..len]) {
            Ok(false) => {}
            Ok(true) => panic!("truncation to {len} of {} bytes loaded", bytes.len()),
            Err(msg) => panic!("truncation to {len} panicked: {msg}"),
        }
    }
}

#[test]
fn from_bytes_every_byte_flip_never_panics() {
    let bytes = to_bytes(&small_graph()).unwrap();
    let mut panics = Vec::new();
    let mut loaded = 0;
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x80, 0xFF, 0x10] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            match load_no_panic(&b) {
                Ok(ok) => loaded += ok as usize,
                Err(msg) => panics.push(format!("byte {i} ^ {mask:#x}: {msg}")),
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{} panics, first: {:?}",
        panics.len(),
        &panics[..panics.len().min(5)]
    );
    // Some flips (in names, attribute values) still give a valid graph; that is fine.
    assert!(loaded > 0);
}

#[test]
fn from_bytes_random_garbage_is_an_error() {
    for seed in 0..200u64 {
        let n = (seed as usize * 37) % 600;
        let mut junk = pseudo_random(seed + 1, n);
        assert!(matches!(load_no_panic(&junk), Ok(false)), "seed {seed}");
        // With a valid header, the body is garbage.
        let mut with_header = MAGIC.to_vec();
        with_header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        with_header.append(&mut junk);
        assert!(load_no_panic(&with_header).is_ok(), "seed {seed} panicked");
    }
}

/// Edits the JSON form of a graph (serde's form, the same structure the file holds), writes it
/// back with `to_bytes` and loads it.
fn load_edited(g: &Graph, edit: impl FnOnce(&mut serde_json::Value)) -> es_core::Result<Graph> {
    let mut j = serde_json::to_value(g).unwrap();
    edit(&mut j);
    let crafted: Graph = serde_json::from_value(j).expect("the edited JSON is still a Graph");
    from_bytes(&to_bytes(&crafted).unwrap())
}

/// The JSON object of the node named `name` in serde's form of a graph.
fn node_json<'a>(j: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
    let slots = j["nodes"]
        .as_array_mut()
        .expect("nodes serialize as a list of slots");
    slots
        .iter_mut()
        .filter_map(|s| s.get_mut("value"))
        .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(name))
        .expect("node in JSON")
}

#[test]
fn check_integrity_catches_crafted_graphs() {
    let g = small_graph();
    // Unedited: loads.
    assert!(load_edited(&g, |_| {}).unwrap() == g);
    // A one-sided data edge: Add's consumer list emptied.
    let e = load_edited(&g, |j| {
        node_json(j, "Add_0")["outputs"][0]["consumers"] = serde_json::json!([]);
    })
    .unwrap_err();
    assert!(
        matches!(e, Error::Serialization(_)) && e.to_string().contains("one-sided"),
        "{e}"
    );
    // An input that points at a missing output port.
    let e = load_edited(&g, |j| {
        node_json(j, "Relu_0")["inputs"][0]["source"]["index"] = serde_json::json!(5);
    })
    .unwrap_err();
    assert!(matches!(e, Error::Serialization(_)), "{e}");
    assert!(
        e.to_string().contains("Relu_0") || e.to_string().contains("Add_0"),
        "{e}"
    );
    // A consumer entry that points at a missing input.
    let e = load_edited(&g, |j| {
        node_json(j, "Add_0")["outputs"][0]["consumers"][0]["index"] = serde_json::json!(3);
    })
    .unwrap_err();
    assert!(matches!(e, Error::Serialization(_)), "{e}");
    assert!(e.to_string().contains("Add_0"), "{e}");
    // Two nodes with the same name.
    let e = load_edited(&g, |j| {
        node_json(j, "Relu_0")["name"] = serde_json::json!("Add_0");
    })
    .unwrap_err();
    assert!(e.to_string().contains("unique"), "{e}");
    // A graph output at a missing port.
    let e = load_edited(&g, |j| {
        j["outputs"][0]["index"] = serde_json::json!(9);
    })
    .unwrap_err();
    assert!(e.to_string().contains("output 0"), "{e}");
    // A control edge to a node that does not exist.
    let e = load_edited(&g, |j| {
        let n = node_json(j, "Relu_0");
        let mut bogus = n["in_control"][0].clone();
        bogus["idx"] = serde_json::json!(999);
        n["in_control"][0] = bogus;
    })
    .unwrap_err();
    assert!(e.to_string().contains("control"), "{e}");
}

#[test]
fn dumps_mention_everything() {
    let g = rich_graph();
    let r = dump::readable(&g);
    assert!(r.starts_with("graph rich("), "{r}");
    for s in [
        "%input_0",
        "Add(",
        "ConcatD(",
        "SplitD(",
        "subgraph then_branch",
        "after[^Add_0]",
        "return",
        "_nan",
    ] {
        assert!(r.contains(s), "readable dump lacks {s:?}:\n{r}");
    }
    let t = dump::txt(&g);
    for s in [
        "name: \"rich\"",
        "type: \"If\"",
        "control_input: \"Add_0\"",
        "private_attr { key: \"_nan\"",
        "key: \"_out_attr\"",
        "parent_node: \"branchy\"",
        "output { index: 1",
        "key: \"graph_attr\"",
    ] {
        assert!(t.contains(s), "txt dump lacks {s:?}:\n{t}");
    }
    // Removed producers are shown, not followed.
    let (mut c, _, b, _) = chain();
    c.remove_node(b).unwrap();
    assert!(dump::txt(&c).contains("source: None"));
    let _ = dump::readable(&Graph::new("empty"));
}

/// Re-encodes a graph after editing its serde JSON form, as a hostile file could.
fn tampered(g: &Graph, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v = serde_json::to_value(g).expect("graph to json");
    edit(&mut v);
    let g2: Graph = serde_json::from_value(v).expect("json to graph");
    to_bytes(&g2).expect("encode")
}

fn control_pair() -> Graph {
    let mut b = GraphBuilder::new("ctl");
    let x = data(&mut b, 0, &[2]);
    let a = b.add_op("Relu", args(vec![one(x)], &[])).expect("relu a");
    let c = b.add_op("Relu", args(vec![one(x)], &[])).expect("relu c");
    b.add_control_dependency(c, &[a]).expect("ctl");
    b.set_output(out0(c), 0).expect("out");
    b.build_and_reset().expect("build")
}

fn nodes_json(v: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
    // SlotMap serializes as a sequence of slots: {"value": node, "version": n} (or null values).
    v["nodes"].as_array_mut().expect("nodes array")
}

/// [`tampered`] with `edit` applied to the node named `name`.
fn tampered_node(g: &Graph, name: &str, edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    tampered(g, |v| {
        for slot in nodes_json(v) {
            if let Some(node) = slot.get_mut("value").filter(|n| n.is_object()) {
                if node["name"] == name {
                    edit(node);
                }
            }
        }
    })
}

#[test]
fn one_sided_control_edge_in_a_file_is_rejected() {
    let g = control_pair();
    let bytes = tampered_node(&g, "Relu_1", |node| {
        node["in_control"] = serde_json::json!([]);
    });
    let r = catch_unwind(|| from_bytes(&bytes).map(|g| g.topo_order().map(|_| ())));
    let r = r.expect("must not panic");
    assert!(
        matches!(r, Err(Error::Serialization(ref m)) if m.contains("one-sided")),
        "{r:?}"
    );
}

#[test]
fn duplicate_consumer_in_a_file_is_rejected() {
    let g = control_pair();
    let bytes = tampered_node(&g, "input_0", |node| {
        let c = node["outputs"][0]["consumers"][0].clone();
        node["outputs"][0]["consumers"]
            .as_array_mut()
            .expect("consumers")
            .push(c);
    });
    let r = catch_unwind(|| from_bytes(&bytes).map(|g| g.topo_order().map(|_| ())))
        .expect("must not panic");
    assert!(r.is_err());
}

#[test]
fn sequence_counter_is_repaired_on_load() {
    let g = control_pair();
    let bytes = tampered(&g, |v| v["next_seq"] = serde_json::json!(0));
    let mut g2 = from_bytes(&bytes).expect("loads");
    let id = g2.add_node(Node::new("late", "NoOp")).expect("add");
    assert_eq!(
        g2.nodes().last().copied(),
        Some(id),
        "a new node comes last"
    );
}
