//! The `.om` file of ge-rs: graphs compiled offline, ready to plan and run.
//!
//! GE's offline model (`ge.offline_compile.build_model`, `atc`) holds graphs compiled for a
//! device. On the CPU the `.om` is ge-rs's own versioned container holding each graph as it is
//! after the compile pipeline ([`plan::prepare`]: passes, shape inference for the inputs it was
//! built for, promotion casts, constant folding and the other built-in optimisations), its
//! weights (the graph's constants), the input signature it was compiled for and the options
//! that shaped it. Loading it goes straight to building the execution plan
//! ([`plan::compile_prepared`]), skipping every compile stage.
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! "GERS.OM\0"            8 bytes, the magic
//! format version         u32 (this build writes and reads 1)
//! manifest length        u64
//! manifest               JSON: format, format_version, producer, soc_version, options,
//!                        graphs: [{name, options, inputs: [{name, dtype, dims}], outputs, bytes}]
//! graphs                 each graph in es-core's native graph format, `bytes` long, in order
//! ```
//!
//! Reading checks the magic, the version, every length against the bytes there are, the
//! manifest's fields, and each graph (es-core's reader checks its integrity) against the
//! manifest; a damaged or hostile file is an error, never a crash.

use crate::error::Result;
use crate::plan::{self, InputSignature, Signature};
use es_core::{DataType, Graph};
use pass_bridge::PassRegistry;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;

pub const MAGIC: &[u8; 8] = b"GERS.OM\0";
pub const FORMAT_VERSION: u32 = 1;
/// The largest manifest a file may declare.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;
const HEADER: usize = 8 + 4 + 8;

/// One graph of a model: compiled, with what it was compiled for.
#[derive(Debug, Clone)]
pub struct OmGraph {
    /// The graph after the compile pipeline (its Data nodes carry the signature).
    pub graph: Graph,
    /// The inputs it was compiled for, in input-index order.
    pub signature: Signature,
    /// The Data nodes' names, in input-index order.
    pub input_names: Vec<String>,
    /// The build options of this graph (GE's keys, as given).
    pub options: BTreeMap<String, String>,
}

/// An offline model: one graph, or several (GE's bundle).
#[derive(Debug, Clone)]
pub struct OmModel {
    /// The `soc_version` the model was built for (recorded; the CPU runs any).
    pub soc_version: String,
    /// The global options of the build (`build_initialize`).
    pub options: BTreeMap<String, String>,
    pub graphs: Vec<OmGraph>,
}

fn bad(what: impl std::fmt::Display) -> es_core::Error {
    es_core::Error::serial(format!("not a valid ge-rs .om model: {what}"))
}

/// Compiles `graph` for `signature` (the passes of `passes` at their stages) into a model
/// graph, and checks that the CPU backend can plan it (every operator has a kernel).
pub fn compile_graph(
    graph: &Graph,
    signature: &Signature,
    options: BTreeMap<String, String>,
    passes: Option<&PassRegistry>,
) -> Result<OmGraph> {
    let prepared = plan::prepare(graph, signature, passes)?;
    plan::compile_prepared(&prepared.graph, signature)?;
    let input_names = prepared
        .data
        .iter()
        .map(|&id| prepared.graph.node(id).map(|n| n.name.to_string()))
        .collect::<es_core::Result<Vec<_>>>()?;
    Ok(OmGraph {
        graph: prepared.graph,
        signature: signature.clone(),
        input_names,
        options,
    })
}

impl OmModel {
    /// The manifest (what the file says about its graphs) as JSON.
    pub fn manifest(&self) -> Json {
        self.manifest_with_sizes(&vec![0; self.graphs.len()])
    }

    fn manifest_with_sizes(&self, sizes: &[usize]) -> Json {
        let graphs: Vec<Json> = self
            .graphs
            .iter()
            .zip(sizes)
            .map(|(g, &n)| {
                let inputs: Vec<Json> = g
                    .signature
                    .iter()
                    .zip(&g.input_names)
                    .map(
                        |(s, name)| json!({"name": name, "dtype": s.dtype.value(), "dims": s.dims}),
                    )
                    .collect();
                json!({
                    "name": g.graph.name,
                    "options": g.options,
                    "inputs": inputs,
                    "outputs": g.graph.outputs.len(),
                    "bytes": n,
                })
            })
            .collect();
        json!({
            "format": "ge-rs om",
            "format_version": FORMAT_VERSION,
            "producer": concat!("ge-rs ", env!("CARGO_PKG_VERSION")),
            "soc_version": self.soc_version,
            "options": self.options,
            "graphs": graphs,
        })
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> es_core::Result<Vec<u8>> {
        let blobs = self
            .graphs
            .iter()
            .map(|g| es_core::serialize::to_bytes(&g.graph))
            .collect::<es_core::Result<Vec<_>>>()?;
        let sizes: Vec<usize> = blobs.iter().map(Vec::len).collect();
        let manifest = serde_json::to_vec(&self.manifest_with_sizes(&sizes))
            .map_err(|e| es_core::Error::serial(format!("cannot encode the manifest: {e}")))?;
        let mut out = Vec::with_capacity(HEADER + manifest.len() + sizes.iter().sum::<usize>());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        out.extend_from_slice(&manifest);
        for b in blobs {
            out.extend_from_slice(&b);
        }
        Ok(out)
    }

    /// Parses a file written by [`OmModel::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> es_core::Result<OmModel> {
        if b.len() < 8 || &b[..8] != MAGIC {
            return Err(bad("bad magic bytes (not an .om file of ge-rs)"));
        }
        if b.len() < HEADER {
            return Err(bad(format!(
                "truncated: {} bytes, shorter than the {HEADER}-byte header",
                b.len()
            )));
        }
        let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if version == 0 || version > FORMAT_VERSION {
            return Err(bad(format!(
                "format version {version}; this build reads version 1 to {FORMAT_VERSION}"
            )));
        }
        let mut n = [0u8; 8];
        n.copy_from_slice(&b[12..20]);
        let mlen = u64::from_le_bytes(n);
        if mlen > MAX_MANIFEST_BYTES {
            return Err(bad(format!(
                "the manifest claims {mlen} bytes (at most {MAX_MANIFEST_BYTES})"
            )));
        }
        let mend = HEADER + mlen as usize;
        if b.len() < mend {
            return Err(bad(format!(
                "truncated: the manifest needs {mlen} bytes, {} are there",
                b.len() - HEADER
            )));
        }
        let m: Json = serde_json::from_slice(&b[HEADER..mend])
            .map_err(|e| bad(format!("damaged manifest: {e}")))?;
        let field = |k: &str| {
            m.get(k)
                .ok_or_else(|| bad(format!("the manifest has no '{k}'")))
        };
        let soc_version = field("soc_version")?
            .as_str()
            .ok_or_else(|| bad("the manifest's 'soc_version' is not a string"))?
            .to_string();
        let options = string_map(field("options")?, "options")?;
        let entries = field("graphs")?
            .as_array()
            .ok_or_else(|| bad("the manifest's 'graphs' is not a list"))?;
        if entries.is_empty() {
            return Err(bad("the manifest lists no graph"));
        }
        let mut pos = mend;
        let mut graphs = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let e = e
                .as_object()
                .ok_or_else(|| bad(format!("graph {i} of the manifest is not an object")))?;
            let g = parse_graph(b, &mut pos, i, e)?;
            graphs.push(g);
        }
        if pos != b.len() {
            return Err(bad(format!("{} bytes after the last graph", b.len() - pos)));
        }
        Ok(OmModel {
            soc_version,
            options,
            graphs,
        })
    }
}

fn string_map(v: &Json, what: &str) -> es_core::Result<BTreeMap<String, String>> {
    let o = v
        .as_object()
        .ok_or_else(|| bad(format!("'{what}' is not an object")))?;
    o.iter()
        .map(|(k, v)| {
            v.as_str()
                .map(|s| (k.clone(), s.to_string()))
                .ok_or_else(|| bad(format!("'{what}' has a value that is not a string")))
        })
        .collect()
}

fn parse_graph(
    b: &[u8],
    pos: &mut usize,
    i: usize,
    e: &Map<String, Json>,
) -> es_core::Result<OmGraph> {
    let get = |k: &str| {
        e.get(k)
            .ok_or_else(|| bad(format!("graph {i} of the manifest has no '{k}'")))
    };
    let size = get("bytes")?
        .as_u64()
        .ok_or_else(|| bad(format!("graph {i}: 'bytes' is not a size")))?;
    let left = (b.len() - *pos) as u64;
    if size > left {
        return Err(bad(format!(
            "truncated: graph {i} needs {size} bytes, {left} are left"
        )));
    }
    let end = *pos + size as usize;
    let graph = es_core::serialize::from_bytes(&b[*pos..end])
        .map_err(|err| bad(format!("graph {i}: {err}")))?;
    *pos = end;
    let options = string_map(get("options")?, "options")?;
    let inputs = get("inputs")?
        .as_array()
        .ok_or_else(|| bad(format!("graph {i}: 'inputs' is not a list")))?;
    let mut signature = Vec::with_capacity(inputs.len());
    let mut input_names = Vec::with_capacity(inputs.len());
    for (k, inp) in inputs.iter().enumerate() {
        let what = || bad(format!("graph {i}: input {k} is not {{name, dtype, dims}}"));
        let name = inp.get("name").and_then(Json::as_str).ok_or_else(what)?;
        let dtype = inp.get("dtype").and_then(Json::as_i64).ok_or_else(what)?;
        let dtype = DataType::from_value(dtype).map_err(|_| what())?;
        let dims = inp
            .get("dims")
            .and_then(Json::as_array)
            .ok_or_else(what)?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize).ok_or_else(what))
            .collect::<es_core::Result<Vec<_>>>()?;
        signature.push(InputSignature { dtype, dims });
        input_names.push(name.to_string());
    }
    let data = graph.input_nodes();
    if data.len() != signature.len() {
        return Err(bad(format!(
            "graph {i} has {} inputs, the manifest lists {}",
            data.len(),
            signature.len()
        )));
    }
    Ok(OmGraph {
        graph,
        signature,
        input_names,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use es_core::{es, GraphBuilder};

    fn model() -> OmModel {
        let mut b = GraphBuilder::new("g");
        let x = crate::test_common::float_input(&mut b);
        let y = es::relu(&mut b, x).unwrap();
        b.set_output(y, 0).unwrap();
        let g = b.build_and_reset().unwrap();
        let sig = vec![InputSignature {
            dtype: DataType::FLOAT,
            dims: vec![2],
        }];
        let og = compile_graph(&g, &sig, BTreeMap::new(), None).unwrap();
        OmModel {
            soc_version: "cpu".into(),
            options: BTreeMap::new(),
            graphs: vec![og],
        }
    }

    #[test]
    fn round_trip_and_damage() {
        let m = model();
        let bytes = m.to_bytes().unwrap();
        let back = OmModel::from_bytes(&bytes).unwrap();
        assert_eq!(back.graphs.len(), 1);
        assert_eq!(back.graphs[0].signature, m.graphs[0].signature);
        assert_eq!(back.graphs[0].input_names, m.graphs[0].input_names);
        // Every truncation is an error, never a panic.
        for n in 0..bytes.len() {
            assert!(OmModel::from_bytes(&bytes[..n]).is_err(), "prefix {n}");
        }
        let mut other = bytes.clone();
        other[8] = 9;
        let e = OmModel::from_bytes(&other).unwrap_err().to_string();
        assert!(e.contains("format version 9"), "{e}");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(OmModel::from_bytes(&longer).is_err());
        // Flipping any byte is an error or a model, never a panic.
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            let _ = OmModel::from_bytes(&b);
        }
    }

    #[test]
    fn planned_without_compiling() {
        let m = model();
        let g = &m.graphs[0];
        let plan = plan::compile_prepared(&g.graph, &g.signature).unwrap();
        let x =
            crate::Value::F32(ndarray::ArrayD::from_shape_vec(vec![2], vec![-1.0, 3.0]).unwrap());
        assert_eq!(
            plan.execute(vec![x]).unwrap()[0].to_f64_vec(),
            vec![0.0, 3.0]
        );
        let stages: Vec<&str> = plan
            .report()
            .stages
            .iter()
            .map(|s| s.stage.as_str())
            .collect();
        assert_eq!(stages, vec!["Plan"]);
    }

    #[test]
    fn session_runs_a_compiled_graph_for_its_signature_only() {
        let m = OmModel::from_bytes(&model().to_bytes().unwrap()).unwrap();
        let g = m.graphs[0].clone();
        let s = crate::Session::new(&BTreeMap::new()).unwrap();
        s.add_compiled_graph(1, g.graph, g.signature, &BTreeMap::new())
            .unwrap();
        let x = |n: usize| {
            crate::Value::F32(ndarray::ArrayD::from_shape_vec(vec![n], vec![-2.0; n]).unwrap())
        };
        assert_eq!(
            s.run_graph(1, vec![x(2)]).unwrap()[0].to_f64_vec(),
            vec![0.0, 0.0]
        );
        let e = s.run_graph(1, vec![x(3)]).unwrap_err().to_string();
        assert!(
            e.contains("compiled offline for inputs DT_FLOAT[2], the run gave DT_FLOAT[3]"),
            "{e}"
        );
        let r = s.compile_report(1).unwrap().unwrap();
        assert_eq!(r.stages.len(), 1);
    }
}
