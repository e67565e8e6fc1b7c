//! The native graph file: lossless and versioned.
//!
//! Layout: the 8 magic bytes `GERSGRPH`, a little-endian u32 format version, then the graph as
//! MessagePack (tensors as raw bytes, floats bit-exact). Loading checks the magic, the version
//! and the graph's integrity (every edge points at a live node and a real port), so a damaged
//! or hostile file is an error, never a crash.

use crate::error::{Error, Result};
use crate::graph::Graph;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"GERSGRPH";
pub const FORMAT_VERSION: u32 = 1;
/// Deepest nesting of subgraphs a file may hold (each level is several MessagePack levels,
/// and the reader bounds its recursion).
pub const MAX_SUBGRAPH_DEPTH: usize = 100;

/// How deep `g`'s subgraphs nest (0: none); writers check it against [`MAX_SUBGRAPH_DEPTH`].
pub fn subgraph_depth(g: &Graph) -> usize {
    g.nodes()
        .iter()
        .filter_map(|id| g.node(*id).ok())
        .flat_map(|n| n.subgraphs.iter())
        .map(|s| 1 + subgraph_depth(&s.graph))
        .max()
        .unwrap_or(0)
}

/// Serializes a graph to bytes.
pub fn to_bytes(g: &Graph) -> Result<Vec<u8>> {
    let d = subgraph_depth(g);
    if d > MAX_SUBGRAPH_DEPTH {
        return Err(Error::NotSupported(format!(
            "saving graph '{}': subgraphs nested {d} levels deep (at most {MAX_SUBGRAPH_DEPTH})",
            g.name
        )));
    }
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    rmp_serde::encode::write_named(&mut out, g)
        .map_err(|e| Error::serial(format!("cannot encode graph '{}': {e}", g.name)))?;
    Ok(out)
}

/// Parses a graph from bytes written by [`to_bytes`].
pub fn from_bytes(b: &[u8]) -> Result<Graph> {
    if b.len() < 12 || &b[..8] != MAGIC {
        return Err(Error::serial("not a ge-rs graph file (bad magic bytes)"));
    }
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[8..12]);
    let version = u32::from_le_bytes(v);
    if version == 0 || version > FORMAT_VERSION {
        return Err(Error::serial(format!(
            "graph file format version {version} is not supported (this build reads 1..={FORMAT_VERSION})"
        )));
    }
    let mut body: &[u8] = &b[12..];
    let mut de = rmp_serde::Deserializer::new(&mut body);
    let decoded: std::result::Result<Graph, _> = serde::Deserialize::deserialize(&mut de);
    drop(de);
    let mut g = decoded.map_err(|e| Error::serial(format!("damaged graph file: {e}")))?;
    if !body.is_empty() {
        return Err(Error::serial(format!(
            "damaged graph file: {} bytes after the graph",
            body.len()
        )));
    }
    g.reindex();
    g.check_integrity()?;
    Ok(g)
}

pub fn save(g: &Graph, path: &Path) -> Result<()> {
    let bytes = to_bytes(g)?;
    std::fs::write(path, bytes)
        .map_err(|e| Error::serial(format!("cannot write {}: {e}", path.display())))
}

pub fn load(path: &Path) -> Result<Graph> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::serial(format!("cannot read {}: {e}", path.display())))?;
    from_bytes(&bytes)
}
