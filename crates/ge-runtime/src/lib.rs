//! ge-runtime: running ge-rs graphs.
//!
//! - [`Session`]: graphs by id, options (`ge.device`, `ge.graphMode`,
//!   `ge.graphCacheCapacity`), `run_graph`, and per graph an LRU cache of execution plans, one
//!   per input signature: a hit replays the plan without re-inferring shapes, re-selecting
//!   kernels or reloading constants; a miss compiles ("captures") one ([`CacheStats`]);
//! - [`plan::compile`]: the compile pipeline (validation, passes at their stages, inference
//!   from the actual inputs, dead-node removal, kernel selection, buffer liveness) and
//!   [`Plan::execute`];
//! - [`Backend`]: where graphs run: the CPU ([`CpuBackend`]) here, ACL (`ge.device=acl`) in
//!   the `ge-acl` crate, which registers itself ([`backend::register_acl_backend`]);
//! - the CPU kernels ([`kernels`]) over [`Value`]s, `ndarray` arrays of f32, f64, f16, bf16,
//!   int8–int64, uint8–uint64 and bool.
//!
//! ```
//! use es_core::{es, DataType, Format, GraphBuilder, Shape};
//! use ge_runtime::{Session, Value};
//! use std::collections::BTreeMap;
//!
//! let mut b = GraphBuilder::new("g");
//! let x = b.create_input(0, None, "Data", DataType::FLOAT, Format::ND, Shape::new(vec![2])).unwrap();
//! let y = es::relu(&mut b, x).unwrap();
//! b.set_output(y, 0).unwrap();
//! let graph = b.build_and_reset().unwrap();
//!
//! let session = Session::new(&BTreeMap::new()).unwrap();
//! session.add_graph(1, graph, &BTreeMap::new()).unwrap();
//! let x = Value::F32(ndarray::ArrayD::from_shape_vec(vec![2], vec![-1.0, 2.0]).unwrap());
//! let out = session.run_graph(1, vec![x]).unwrap();
//! assert_eq!(out[0].to_f64_vec(), vec![0.0, 2.0]);
//! ```

pub(crate) mod arena;
pub mod backend;
pub mod collective;
pub mod eager;
pub mod error;
pub mod fuse;
pub mod kernels;
pub mod lowp;
pub mod memplan;
pub mod om;
pub mod optimize;
pub mod options;
pub mod par;
pub mod plan;
mod rewrite;
pub mod session;
pub mod value;

/// The helpers the unit tests share with the integration tests.
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

pub use backend::{Backend, BackendPlan, CpuBackend};
pub use error::{Error, Result};
pub use ndarray;
pub use plan::{CollectiveReport, CompileReport, Plan, Signature};
pub use session::{CacheStats, Device, Options, Session};
pub use value::Value;
