//! Sessions: graphs by id, options, and the capture/replay cache of execution plans.
//!
//! In graph mode (the default) a run looks its input signature up in the graph's LRU cache of
//! plans: a hit replays the plan (no inference, no kernel selection, constants already
//! loaded); a miss compiles ("captures") one and stores it, evicting the least recently used
//! plan when the cache is full. In eager mode a run goes node by node, each node compiled alone
//! for the signature of the values reaching it and that compile kept per node ([`crate::eager`]:
//! a node seen with that signature before reuses its inferred outputs, kernel and buffers); no
//! plan is cached. Both modes run the same kernels, so they give identical results.
//!
//! `ge.device` picks the [`Backend`]: the CPU, ACL (the `ge-acl` crate, registered with
//! [`crate::backend::register_acl_backend`]: a cached plan holds a captured graph that a hit
//! replays, and evicting it destroys the graph), or `auto` (ACL when it opens, otherwise the
//! CPU with a log line saying why). Every backend shares the cache, its signature rules, its
//! counters and the options.

use crate::backend::{self, Backend, BackendPlan, CpuBackend};
use crate::eager::{Eager, EagerStats, Outcome};
use crate::error::{Error, Result};
use crate::memplan::MemoryPlan;
use crate::plan::{self, CompileReport, Signature};
use crate::value::Value;
use es_core::Graph;
use lru::LruCache;
use pass_bridge::PassRegistry;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

pub use crate::options::{Device, Options, DEFAULT_CACHE_CAPACITY, OPTION_KEYS};

/// Counters of a graph's plan cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub captures: u64,
    pub evictions: u64,
    /// Plans held now.
    pub size: usize,
    pub capacity: usize,
}

struct GraphEntry {
    graph: Graph,
    /// Set for a graph compiled before (an offline model's): the one signature it runs, and
    /// compiles only plan it.
    compiled_for: Option<Signature>,
    options: Options,
    backend: Arc<dyn Backend>,
    cache: Mutex<LruCache<Signature, Arc<dyn BackendPlan>>>,
    stats: Mutex<CacheStats>,
    last_report: Mutex<Option<CompileReport>>,
    /// The graph prepared for eager runs (at the first one; None where they compile the whole
    /// graph: another backend, an offline model).
    eager: OnceLock<Option<Arc<Eager>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Supplies the passes a compile runs (a snapshot of a registry, taken per compile).
pub type PassSource = Arc<dyn Fn() -> Option<PassRegistry> + Send + Sync>;

/// A session: graphs by id, run on their backends. `Session` is `Sync`: runs of one or
/// several graphs may go on from several threads at once.
pub struct Session {
    options: Options,
    graphs: RwLock<FxHashMap<u32, Arc<GraphEntry>>>,
    passes: Option<PassSource>,
    /// ACL backends opened by this session, by device id.
    acl: Mutex<FxHashMap<i32, Arc<dyn Backend>>>,
    /// Why `auto` chose the CPU, not yet taken by [`Session::take_device_notes`].
    notes: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("options", &self.options)
            .finish()
    }
}

impl Session {
    /// A session with `options` over the environment's defaults.
    pub fn new(options: &BTreeMap<String, String>) -> Result<Session> {
        let o = Options::from_env()?.with(options)?;
        let s = Session {
            options: o,
            graphs: RwLock::new(FxHashMap::default()),
            passes: None,
            acl: Mutex::new(FxHashMap::default()),
            notes: Mutex::new(Vec::new()),
        };
        s.backend(&s.options)?;
        Ok(s)
    }

    /// The backend `o` asks for, opening the ACL device on first use.
    fn backend(&self, o: &Options) -> Result<Arc<dyn Backend>> {
        let open = || -> Result<Arc<dyn Backend>> {
            let mut m = lock(&self.acl);
            if let Some(b) = m.get(&o.device_id) {
                return Ok(b.clone());
            }
            let b = backend::open_acl(o.device_id)?;
            m.insert(o.device_id, b.clone());
            Ok(b)
        };
        match o.device {
            Device::Cpu => Ok(Arc::new(CpuBackend)),
            Device::Acl => open(),
            Device::Auto => match open() {
                Ok(b) => Ok(b),
                Err(e) => {
                    let note = format!(
                        "ge.device=auto: running on the CPU, because ACL is not usable: {e}"
                    );
                    log::warn!("{note}");
                    lock(&self.notes).push(note);
                    Ok(Arc::new(CpuBackend))
                }
            },
        }
    }

    /// The messages saying why `ge.device=auto` chose the CPU since the last call (also
    /// logged with `log::warn!`; the Python layer passes them to `logging`).
    pub fn take_device_notes(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.notes))
    }

    /// Whether graph `id` runs on the ACL backend (else on the CPU).
    pub fn runs_on_acl(&self, id: u32) -> Result<bool> {
        Ok(self.entry(id)?.backend.name() == "acl")
    }

    /// Sets where compiles get their passes from.
    pub fn with_passes(mut self, source: PassSource) -> Session {
        self.passes = Some(source);
        self
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Adds `graph` under `id` (graph-level `options` over the session's).
    pub fn add_graph(
        &self,
        id: u32,
        graph: Graph,
        options: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.insert(id, graph, None, options)
    }

    /// Adds a graph compiled before for `signature` (an offline model's, see [`crate::om`])
    /// under `id`: its runs build the execution plan from it directly, without passes,
    /// inference or optimisation, and inputs of another signature are refused.
    pub fn add_compiled_graph(
        &self,
        id: u32,
        graph: Graph,
        signature: Signature,
        options: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.insert(id, graph, Some(signature), options)
    }

    fn insert(
        &self,
        id: u32,
        graph: Graph,
        compiled_for: Option<Signature>,
        options: &BTreeMap<String, String>,
    ) -> Result<()> {
        let o = self.options.with(options)?;
        let backend = self.backend(&o)?;
        graph
            .validate()
            .map_err(|e| Error::Compile(format!("graph '{}' is not valid: {e}", graph.name)))?;
        let cap = NonZeroUsize::new(o.cache_capacity).unwrap_or(NonZeroUsize::MIN);
        let entry = GraphEntry {
            graph,
            compiled_for,
            cache: Mutex::new(LruCache::new(cap)),
            stats: Mutex::new(CacheStats {
                capacity: o.cache_capacity,
                ..Default::default()
            }),
            last_report: Mutex::new(None),
            eager: OnceLock::new(),
            options: o,
            backend,
        };
        let mut g = self.graphs.write().unwrap_or_else(|p| p.into_inner());
        if g.contains_key(&id) {
            return Err(Error::Graph(format!(
                "graph id {id} is already in the session"
            )));
        }
        g.insert(id, Arc::new(entry));
        Ok(())
    }

    /// Removes graph `id` and its plans.
    pub fn remove_graph(&self, id: u32) -> Result<()> {
        let mut g = self.graphs.write().unwrap_or_else(|p| p.into_inner());
        g.remove(&id)
            .map(|_| ())
            .ok_or_else(|| Error::Graph(format!("graph id {id} is not in the session")))
    }

    fn entry(&self, id: u32) -> Result<Arc<GraphEntry>> {
        self.graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::Graph(format!("graph id {id} is not in the session")))
    }

    pub fn graph_ids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .graphs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .copied()
            .collect();
        v.sort_unstable();
        v
    }

    fn compile(&self, e: &GraphEntry, sig: &Signature) -> Result<Arc<dyn BackendPlan>> {
        let passes = self.passes.as_ref().and_then(|p| p());
        self.compile_with(e, sig, passes)
    }

    /// [`Session::compile`] with the passes `passes` (a snapshot of the registry).
    fn compile_with(
        &self,
        e: &GraphEntry,
        sig: &Signature,
        passes: Option<PassRegistry>,
    ) -> Result<Arc<dyn BackendPlan>> {
        if let Some(s) = &e.compiled_for {
            if s != sig {
                return Err(Error::Input(format!(
                    "graph '{}' was compiled offline for inputs {}, the run gave {}",
                    e.graph.name,
                    plan::signature_text(s),
                    plan::signature_text(sig)
                )));
            }
            e.backend.check_signature(sig)?;
            let plan: Arc<dyn BackendPlan> = e
                .backend
                .plan(plan::already_prepared(e.graph.clone(), sig)?, sig)?
                .into();
            return Self::admit(e, plan);
        }
        e.backend.check_signature(sig)?;
        let plan: Arc<dyn BackendPlan> = e
            .backend
            .plan(plan::prepare(&e.graph, sig, passes.as_ref())?, sig)?
            .into();
        log::debug!("graph '{}': {}", e.graph.name, plan.report());
        Self::admit(e, plan)
    }

    /// Records a new plan's report and refuses the plan when its memory plan's peak is over
    /// the graph's memory limit (the report, memory plan included, stays readable).
    fn admit(e: &GraphEntry, plan: Arc<dyn BackendPlan>) -> Result<Arc<dyn BackendPlan>> {
        *lock(&e.last_report) = Some(plan.report().clone());
        if let Some(m) = &plan.report().memory {
            m.check(e.options.memory_limit).map_err(|err| match err {
                Error::Resource(msg) => Error::Resource(format!("graph '{}': {msg}", e.graph.name)),
                err => err,
            })?;
        }
        Ok(plan)
    }

    /// Runs graph `id` on `inputs` (in input-index order).
    pub fn run_graph(&self, id: u32, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let e = self.entry(id)?;
        crate::memplan::with_limit(e.options.memory_limit, || self.run_entry(&e, inputs))
    }

    /// Runs a graph's entry (compiling or replaying its plan) on `inputs`.
    fn run_entry(&self, e: &GraphEntry, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let sig = plan::signature(&inputs);
        if !e.options.graph_mode {
            return self.run_eager(e, &sig, inputs);
        }
        let cached = lock(&e.cache).get(&sig).cloned();
        let plan = match cached {
            Some(p) => {
                lock(&e.stats).hits += 1;
                p
            }
            None => {
                lock(&e.stats).misses += 1;
                // Compiled outside the lock: other signatures keep running meanwhile.
                let p = self.compile(e, &sig)?;
                let evicted = {
                    let mut cache = lock(&e.cache);
                    let mut st = lock(&e.stats);
                    let mut evicted = None;
                    if cache.peek(&sig).is_none() {
                        st.captures += 1;
                        if let Some((old, plan)) = cache.push(sig.clone(), p.clone()) {
                            if old != sig {
                                st.evictions += 1;
                            }
                            evicted = Some(plan);
                        }
                    }
                    st.size = cache.len();
                    evicted
                };
                // Dropped outside the locks: an evicted ACL plan's captured graph and buffers
                // are released here (or by the last run still using it).
                drop(evicted);
                p
            }
        };
        plan.run(inputs, &e.options)
    }

    /// An eager run: node by node on the CPU ([`crate::eager`]), or through a compile of the
    /// whole graph where passes are registered (they see the whole graph), on another backend,
    /// for an offline model, or where a node does not compile alone.
    fn run_eager(&self, e: &GraphEntry, sig: &Signature, inputs: Vec<Value>) -> Result<Vec<Value>> {
        let passes = self.passes.as_ref().and_then(|p| p());
        let with_passes = passes
            .as_ref()
            .is_some_and(|r| r.descriptors().next().is_some());
        let mut inputs = inputs;
        if !with_passes && e.compiled_for.is_none() && e.backend.name() == "cpu" {
            let eager = e
                .eager
                .get_or_init(|| Eager::new(&e.graph).ok().map(Arc::new));
            if let Some(eg) = eager.as_ref() {
                e.backend.check_signature(sig)?;
                match eg.verdict(sig) {
                    Some(true) => {
                        let limit = e.options.memory_limit;
                        match crate::par::run_with(e.options.threads, || {
                            eg.run(&e.graph, inputs, sig, limit)
                        })? {
                            Outcome::Done(outs) => return Ok(outs),
                            Outcome::Whole(back) => inputs = back,
                        }
                    }
                    Some(false) => {}
                    None => {
                        // The signature's first run: the whole graph's compile decides.
                        eg.note_whole_run();
                        let prepared = plan::prepare(&e.graph, sig, None)?;
                        eg.set_verdict(sig, Eager::keeps_nodes(&e.graph, &prepared.graph));
                        let plan: Arc<dyn BackendPlan> = e.backend.plan(prepared, sig)?.into();
                        log::debug!("graph '{}': {}", e.graph.name, plan.report());
                        return Self::admit(e, plan)?.run(inputs, &e.options);
                    }
                }
                eg.note_whole_run();
            }
        }
        self.compile_with(e, sig, passes)?.run(inputs, &e.options)
    }

    /// The counters of graph `id`'s eager node caches (zero before its first eager run).
    pub fn eager_stats(&self, id: u32) -> Result<EagerStats> {
        let e = self.entry(id)?;
        Ok(e.eager
            .get()
            .and_then(|x| x.as_ref())
            .map(|x| x.stats())
            .unwrap_or_default())
    }

    /// The counters of graph `id`'s plan cache.
    pub fn graph_cache_stats(&self, id: u32) -> Result<CacheStats> {
        let e = self.entry(id)?;
        let mut s = *lock(&e.stats);
        s.size = lock(&e.cache).len();
        Ok(s)
    }

    /// The report of graph `id`'s latest compile, if it was compiled.
    pub fn compile_report(&self, id: u32) -> Result<Option<CompileReport>> {
        Ok(lock(&self.entry(id)?.last_report).clone())
    }

    /// The options graph `id` runs with (the session's, with its own over them).
    pub fn graph_options(&self, id: u32) -> Result<Options> {
        Ok(self.entry(id)?.options.clone())
    }

    /// The memory plan of graph `id`'s latest compile (refused or not), if it was compiled
    /// and its backend makes one.
    pub fn plan_memory(&self, id: u32) -> Result<Option<MemoryPlan>> {
        Ok(lock(&self.entry(id)?.last_report)
            .as_ref()
            .and_then(|r| r.memory.clone()))
    }
}
