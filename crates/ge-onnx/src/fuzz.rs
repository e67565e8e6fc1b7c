//! A mutation fuzzer for the model loaders: ONNX bytes → [`crate::load_bytes`], and ge-rs's own
//! graph format → `es_core::serialize::from_bytes`. Each case mutates a seed from the corpus
//! (`crates/ge-onnx/fuzz/corpus`) either as raw bytes (bit flips, byte changes, truncation,
//! insertion, splicing) or as a decoded model (dims, element types, attribute kinds and values,
//! names, nesting) and loads it; a loader may accept or reject the input, but must not panic.
//!
//! Run briefly by `cargo test -p ge-onnx --test fuzz`; for a long run:
//! `cargo run --release -p ge-onnx --example fuzz -- --seconds 600`.

use crate::proto::{self, ModelProto};
use prost::Message;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A small deterministic generator (xorshift64*), so failures reproduce from their seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    fn pick_i64(&mut self) -> i64 {
        const V: &[i64] = &[
            0,
            1,
            -1,
            2,
            3,
            -2,
            7,
            64,
            255,
            1 << 20,
            1 << 31,
            -(1 << 31),
            i64::MAX,
            i64::MIN,
            1 << 40,
        ];
        V[self.below(V.len())]
    }
}

/// Raw-byte mutations.
pub fn mutate_bytes(seed: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        if b.is_empty() {
            b.push(rng.next_u64() as u8);
            continue;
        }
        let i = rng.below(b.len());
        match rng.below(7) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next_u64() as u8,
            2 => b.truncate(i),
            3 => b.insert(i, rng.next_u64() as u8),
            4 => {
                b.remove(i);
            }
            5 => {
                // Splice a piece of another seed.
                if !other.is_empty() {
                    let s = rng.below(other.len());
                    let e = (s + 1 + rng.below(32)).min(other.len());
                    b.splice(i..i, other[s..e].iter().copied());
                }
            }
            _ => {
                // A varint made huge.
                b[i] = 0xff;
                if i + 1 < b.len() {
                    b[i + 1] = 0xff;
                }
            }
        }
    }
    b
}

fn mutate_tensor(t: &mut proto::TensorProto, rng: &mut Rng) {
    match rng.below(6) {
        0 => {
            if !t.dims.is_empty() {
                let k = rng.below(t.dims.len());
                t.dims[k] = rng.pick_i64();
            } else {
                t.dims.push(rng.pick_i64());
            }
        }
        1 => t.data_type = Some(rng.below(30) as i32),
        2 => {
            t.raw_data = t.raw_data.take().map(|mut r| {
                r.truncate(rng.below(r.len() + 1));
                r
            })
        }
        3 => {
            t.data_location = Some(1);
            t.external_data = vec![proto::StringStringEntryProto {
                key: Some("location".into()),
                value: Some(["../x", "/etc/passwd", "w.bin", ""][rng.below(4)].into()),
            }];
        }
        4 => t.float_data.push(1.0),
        _ => t.dims.push(rng.pick_i64()),
    }
}

fn mutate_attr(a: &mut proto::AttributeProto, rng: &mut Rng) {
    match rng.below(7) {
        0 => a.r#type = Some(rng.below(16) as i32),
        1 => a.i = Some(rng.pick_i64()),
        2 => a.ints = (0..rng.below(6)).map(|_| rng.pick_i64()).collect(),
        3 => a.f = Some([f32::NAN, f32::INFINITY, -1.0, 0.0, 1e30][rng.below(5)]),
        4 => a.s = Some(vec![0xff, 0xfe]),
        5 => {
            if let Some(t) = a.t.as_mut() {
                mutate_tensor(t, rng)
            } else {
                a.name = Some(["axis", "perm", "to", "pads", "value", ""][rng.below(6)].into())
            }
        }
        _ => a.floats = vec![0.5; rng.below(5)],
    }
}

fn mutate_graph(g: &mut proto::GraphProto, rng: &mut Rng, depth: usize) {
    let choice = rng.below(10);
    match choice {
        0 if !g.node.is_empty() => {
            let k = rng.below(g.node.len());
            let n = &mut g.node[k];
            if !n.input.is_empty() {
                let i = rng.below(n.input.len());
                n.input[i] = ["", "missing", "x", "y"][rng.below(4)].into();
            } else {
                n.input.push("x".into());
            }
        }
        1 if !g.node.is_empty() => {
            let k = rng.below(g.node.len());
            let n = &mut g.node[k];
            if n.attribute.is_empty() {
                n.attribute.push(proto::AttributeProto {
                    name: Some("axis".into()),
                    i: Some(rng.pick_i64()),
                    ..Default::default()
                });
            } else {
                let i = rng.below(n.attribute.len());
                mutate_attr(&mut n.attribute[i], rng);
            }
        }
        2 if !g.node.is_empty() => {
            let k = rng.below(g.node.len());
            let n = &mut g.node[k];
            match rng.below(3) {
                0 => n.output.push(format!("extra{}", rng.below(3))),
                1 => n.output.clear(),
                _ => n.input.push(String::new()),
            }
        }
        3 if !g.node.is_empty() => {
            // Duplicate or drop a node (repeated outputs, dangling inputs).
            let k = rng.below(g.node.len());
            if rng.below(2) == 0 {
                let n = g.node[k].clone();
                g.node.push(n);
            } else {
                g.node.remove(k);
            }
        }
        4 if !g.initializer.is_empty() => {
            let k = rng.below(g.initializer.len());
            mutate_tensor(&mut g.initializer[k], rng);
        }
        5 if !g.input.is_empty() => {
            let k = rng.below(g.input.len());
            let vi = &mut g.input[k];
            if let Some(proto::type_proto::Value::TensorType(t)) =
                vi.r#type.as_mut().and_then(|t| t.value.as_mut())
            {
                t.elem_type = Some(rng.below(30) as i32);
                if let Some(s) = t.shape.as_mut() {
                    for d in &mut s.dim {
                        if rng.below(2) == 0 {
                            d.value = Some(proto::tensor_shape_proto::dimension::Value::DimValue(
                                rng.pick_i64(),
                            ));
                        }
                    }
                }
            }
        }
        6 => {
            if g.output.is_empty() {
                g.output.push(proto::ValueInfoProto {
                    name: Some("nowhere".into()),
                    ..Default::default()
                });
            } else {
                let k = rng.below(g.output.len());
                g.output[k].name = Some(["", "x", "nowhere"][rng.below(3)].into());
            }
        }
        7 if depth < 3 => {
            // Recurse into a subgraph attribute, or nest this graph into an If.
            let mut done = false;
            for n in g.node.iter_mut() {
                for a in n.attribute.iter_mut() {
                    if let Some(sub) = a.g.as_mut() {
                        mutate_graph(sub, rng, depth + 1);
                        done = true;
                        break;
                    }
                }
                if done {
                    break;
                }
            }
            if !done {
                let body = g.clone();
                g.node.push(proto::NodeProto {
                    op_type: Some("If".into()),
                    input: vec!["x".into()],
                    output: vec!["if_out".into()],
                    attribute: vec![
                        proto::AttributeProto {
                            name: Some("then_branch".into()),
                            r#type: Some(proto::AttributeType::Graph as i32),
                            g: Some(body.clone()),
                            ..Default::default()
                        },
                        proto::AttributeProto {
                            name: Some("else_branch".into()),
                            r#type: Some(proto::AttributeType::Graph as i32),
                            g: Some(body),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                });
            }
        }
        8 if !g.node.is_empty() => {
            let k = rng.below(g.node.len());
            g.node[k].op_type = Some(
                [
                    "Conv", "Reshape", "Loop", "Scan", "Split", "Unknown", "Constant",
                ][rng.below(7)]
                .into(),
            );
        }
        _ => {
            if !g.node.is_empty() {
                let k = rng.below(g.node.len());
                g.node[k].domain = Some(["", "ai.onnx.ml", "com.x"][rng.below(3)].into());
            }
        }
    }
}

/// Structure-aware mutation of a decoded model.
pub fn mutate_model(seed: &ModelProto, rng: &mut Rng) -> ModelProto {
    let mut m = seed.clone();
    for _ in 0..1 + rng.below(3) {
        match rng.below(8) {
            0 => {
                if let Some(o) = m.opset_import.first_mut() {
                    o.version = Some(rng.pick_i64());
                }
            }
            1 => {
                if let Some(f) = m.functions.first_mut() {
                    if let Some(n) = f.node.first_mut() {
                        n.input.push("nowhere".into());
                    }
                    if rng.below(2) == 0 {
                        // A function calling itself.
                        let call = proto::NodeProto {
                            op_type: f.name.clone(),
                            domain: f.domain.clone(),
                            input: f.input.clone(),
                            output: f.output.clone(),
                            ..Default::default()
                        };
                        f.node = vec![call];
                    }
                }
            }
            _ => {
                if let Some(g) = m.graph.as_mut() {
                    mutate_graph(g, rng, 0);
                }
            }
        }
    }
    m
}

/// Outcome counts of a fuzz run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub cases: u64,
    pub accepted: u64,
    pub rejected: u64,
}

/// Runs one input through the ONNX loader and through the native graph format; Err(message)
/// when a loader panicked.
pub fn check_one(bytes: &[u8]) -> Result<bool, String> {
    let opts = crate::Options::default();
    let r = catch_unwind(AssertUnwindSafe(|| crate::load_bytes(bytes, &opts)));
    match r {
        Err(p) => Err(panic_text(&p)),
        Ok(Ok(g)) => {
            // Round trip through the native format, then fuzz that format with the same bytes.
            let native = catch_unwind(AssertUnwindSafe(|| {
                es_core::serialize::to_bytes(&g).and_then(|b| es_core::serialize::from_bytes(&b))
            }));
            match native {
                Err(p) => Err(format!("native format: {}", panic_text(&p))),
                Ok(_) => Ok(true),
            }
        }
        Ok(Err(_)) => Ok(false),
    }
}

/// Runs a mutated input through the native format's reader.
pub fn check_native(bytes: &[u8]) -> Result<bool, String> {
    match catch_unwind(AssertUnwindSafe(|| es_core::serialize::from_bytes(bytes))) {
        Err(p) => Err(format!("native format: {}", panic_text(&p))),
        Ok(r) => Ok(r.is_ok()),
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Runs `cases` mutations of `corpus` (ONNX seeds) with `seed`; returns the stats, or the first
/// input that made a loader panic (with its message).
pub fn run(corpus: &[Vec<u8>], cases: u64, seed: u64) -> Result<Stats, (Vec<u8>, String)> {
    let mut rng = Rng::new(seed);
    let decoded: Vec<ModelProto> = corpus
        .iter()
        .filter_map(|b| ModelProto::decode(b.as_slice()).ok())
        .collect();
    let natives: Vec<Vec<u8>> = decoded
        .iter()
        .filter_map(|m| {
            crate::load_bytes(&m.encode_to_vec(), &crate::Options::default())
                .ok()
                .and_then(|g| es_core::serialize::to_bytes(&g).ok())
        })
        .collect();
    let mut st = Stats::default();
    for _ in 0..cases {
        st.cases += 1;
        let k = rng.below(corpus.len());
        let kind = rng.below(4);
        let (bytes, native) = match kind {
            0 => {
                let other = &corpus[rng.below(corpus.len())];
                (mutate_bytes(&corpus[k], other, &mut rng), false)
            }
            1 if !natives.is_empty() => {
                let n = &natives[rng.below(natives.len())];
                (mutate_bytes(n, n, &mut rng), true)
            }
            _ if !decoded.is_empty() => {
                let m = &decoded[rng.below(decoded.len())];
                (mutate_model(m, &mut rng).encode_to_vec(), false)
            }
            _ => (corpus[k].clone(), false),
        };
        let r = if native {
            check_native(&bytes)
        } else {
            check_one(&bytes)
        };
        match r {
            Ok(true) => st.accepted += 1,
            Ok(false) => st.rejected += 1,
            Err(msg) => return Err((bytes, msg)),
        }
    }
    Ok(st)
}

/// The seed corpus in `dir` (every `*.onnx` file).
pub fn read_corpus(dir: &std::path::Path) -> std::io::Result<Vec<Vec<u8>>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
        .collect();
    files.sort();
    files.iter().map(std::fs::read).collect()
}
