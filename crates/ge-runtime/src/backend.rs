//! Backends: where a session's graphs run.
//!
//! A [`Backend`] plans a graph that went through every compile stage ([`plan::prepare`], or
//! [`plan::already_prepared`] for an offline model) into a [`BackendPlan`] for one input
//! signature; the session caches that plan per signature and runs it. The CPU backend
//! ([`CpuBackend`]) is here; the ACL backend lives in the `ge-acl` crate, which depends on this
//! one and registers itself ([`register_acl_backend`]) so that `ge.device=acl` (or `auto`)
//! finds it without ge-runtime depending on ACL.

use crate::error::{Error, Result};
use crate::options::Options;
use crate::plan::{self, CompileReport, Plan, Prepared, Signature};
use crate::value::Value;
use std::sync::{Arc, RwLock};

/// A backend's execution plan for one input signature.
pub trait BackendPlan: Send + Sync {
    /// What the compile did (stages, passes, planned nodes, time).
    fn report(&self) -> &CompileReport;
    /// Runs the plan on `inputs` (of its signature) under the graph's `options` (threads,
    /// graph or eager mode).
    fn run(&self, inputs: Vec<Value>, options: &Options) -> Result<Vec<Value>>;
}

/// A device that runs graphs.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// The device's name, as `ge.device` spells it ("cpu", "acl").
    fn name(&self) -> &'static str;
    /// Refuses inputs the backend cannot take before any compile stage runs.
    fn check_signature(&self, _sig: &Signature) -> Result<()> {
        Ok(())
    }
    /// Plans `prepared` (the graph after every compile stage, for `sig`).
    fn plan(&self, prepared: Prepared, sig: &Signature) -> Result<Box<dyn BackendPlan>>;
}

/// The CPU backend: the kernels of [`crate::kernels`] over [`Value`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn check_signature(&self, sig: &Signature) -> Result<()> {
        plan::check_input_dtypes(sig)
    }
    fn plan(&self, prepared: Prepared, sig: &Signature) -> Result<Box<dyn BackendPlan>> {
        Ok(Box::new(plan::plan_prepared(prepared, sig)?))
    }
}

impl BackendPlan for Plan {
    fn report(&self) -> &CompileReport {
        Plan::report(self)
    }
    fn run(&self, inputs: Vec<Value>, options: &Options) -> Result<Vec<Value>> {
        crate::par::run_with(options.threads, || self.execute(inputs))
    }
}

/// Opens the ACL backend on a device id (`ge.exec.deviceId`).
pub type BackendFactory = fn(device_id: i32) -> Result<Arc<dyn Backend>>;

static ACL_FACTORY: RwLock<Option<BackendFactory>> = RwLock::new(None);

/// Makes `ge.device=acl` (and `auto`) open devices with `factory` (`ge_acl::register` calls
/// this; a later registration replaces an earlier one).
pub fn register_acl_backend(factory: BackendFactory) {
    *ACL_FACTORY.write().unwrap_or_else(|p| p.into_inner()) = Some(factory);
}

/// Opens ACL device `device_id` through the registered backend.
pub(crate) fn open_acl(device_id: i32) -> Result<Arc<dyn Backend>> {
    let factory = *ACL_FACTORY.read().unwrap_or_else(|p| p.into_inner());
    match factory {
        Some(open) => open(device_id),
        None => Err(Error::Device(
            "the ACL backend is not part of this program: ge-runtime runs graphs on ACL once \
             the ge-acl crate registered it (ge_acl::register())"
                .into(),
        )),
    }
}
