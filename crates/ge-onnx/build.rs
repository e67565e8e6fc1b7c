//! Generates the protobuf messages of `proto/*.proto` with prost-build. protox parses the
//! `.proto` files in Rust, so the build needs no `protoc`.

use std::path::PathBuf;

/// ONNX's schema (from the ONNX release, proto2) and the `.air` layout (ge-rs's, proto3).
const PROTOS: &[&str] = &["onnx.proto", "ge_air.proto"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    for p in PROTOS {
        println!("cargo:rerun-if-changed={}", dir.join(p).display());
    }
    let fds = protox::compile(PROTOS, [&dir])?;
    prost_build::Config::new()
        // Maps in sorted order: a graph serialises to the same bytes every time.
        .btree_map([".ge.proto"])
        .compile_fds(fds)?;
    Ok(())
}
