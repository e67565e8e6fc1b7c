//! Loads an ONNX model and prints its graph: `cargo run -p ge-onnx --example load -- MODEL.onnx`
//! (default: a model of the fuzz corpus).

use std::collections::BTreeMap;
use std::path::PathBuf;

fn main() {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/corpus/initializers_and_function.onnx")
        });
    let graph = match ge_onnx::load_file(&path, &ge_onnx::Options::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    for id in graph.nodes() {
        if let Ok(n) = graph.node(id) {
            *ops.entry(n.op_type.to_string()).or_default() += 1;
        }
    }
    println!("graph '{}': {} nodes", graph.name, graph.node_count());
    for (op, n) in ops {
        println!("  {op:<16} {n}");
    }
}
