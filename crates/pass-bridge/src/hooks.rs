//! What a pass implements and sees: GE's three kinds of pass as traits ([`FusionPass`],
//! [`PatternFusionPass`], [`DecomposePass`]), the [`PassContext`] their hooks get, how a hook
//! ends badly ([`HookError`]) and how a run of passes fails ([`PassError`]).

use es_core::pattern::{MatchResult, Pattern, PatternMatcherConfig};
use es_core::{Graph, NodeId};
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

/// How a pass hook (a `run`, `meet_requirements` or `replacement` call) can end badly.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum HookError {
    /// The pass asked to skip: a pattern or decompose pass skips the current match or node; a
    /// fusion pass leaves the graph unchanged. Not a failure.
    #[error("skipped: {0}")]
    Skip(String),
    /// The pass marked the compile as failed (GE's fatal error).
    #[error("{0}")]
    Fatal(String),
    /// Any other error (for Python passes, the message carries the traceback).
    #[error("{0}")]
    Failed(String),
}

impl From<es_core::Error> for HookError {
    fn from(e: es_core::Error) -> Self {
        HookError::Failed(e.to_string())
    }
}

/// Result of a pass hook.
pub type HookResult<T> = std::result::Result<T, HookError>;

/// Why running passes failed. The graph is left as it was before the failing pass.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum PassError {
    /// The pass raised a fatal error.
    #[error("pass '{pass}' failed (fatal): {message}")]
    Fatal { pass: String, message: String },
    /// The pass failed: an exception, a failing status, or a rewrite that could not be applied.
    #[error("pass '{pass}' failed: {message}")]
    Failed { pass: String, message: String },
    /// A bad registration or request (duplicate key, unknown pass name, empty op types).
    #[error("{0}")]
    Registry(String),
}

impl PassError {
    /// The name of the pass that failed, if the error comes from a pass.
    pub fn pass_name(&self) -> Option<&str> {
        match self {
            PassError::Fatal { pass, .. } | PassError::Failed { pass, .. } => Some(pass),
            PassError::Registry(_) => None,
        }
    }
}

/// What a pass sees of its compile: its name, an error message it may set, and the options.
/// GE's `CustomPassContext`.
#[derive(Debug, Clone, Default)]
pub struct PassContext {
    pass_name: String,
    error_message: String,
    options: BTreeMap<String, String>,
    fusions: Vec<FusionReport>,
}

/// One fusion a pass reported (GE's `report_fuse`): the names of the nodes before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusionReport {
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl PassContext {
    pub fn new(pass_name: impl Into<String>, options: BTreeMap<String, String>) -> Self {
        PassContext {
            pass_name: pass_name.into(),
            error_message: String::new(),
            options,
            fusions: Vec::new(),
        }
    }
    pub fn pass_name(&self) -> &str {
        &self.pass_name
    }
    pub fn set_pass_name(&mut self, name: impl Into<String>) {
        self.pass_name = name.into();
    }
    pub fn error_message(&self) -> &str {
        &self.error_message
    }
    pub fn set_error_message(&mut self, message: impl Into<String>) {
        self.error_message = message.into();
    }
    /// The value of option `key`, or `None` when it is not set.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }
    /// Records a fusion (GE's `report_fuse`); it appears in the pass's
    /// [`PassStats`](crate::PassStats).
    pub fn report_fuse(&mut self, before: Vec<String>, after: Vec<String>) {
        self.fusions.push(FusionReport { before, after });
    }
    pub fn fusion_reports(&self) -> &[FusionReport] {
        &self.fusions
    }
}

/// GE's `FusionBasePass`: one call over the whole graph.
pub trait FusionPass: Send {
    /// Rewrites `graph`. `Err(HookError::Skip)` leaves the graph as it was before the call.
    fn run(&mut self, graph: &mut Graph, ctx: &mut PassContext) -> HookResult<()>;
}

/// GE's `PatternFusionPass`: the executor finds the matches of [`patterns`](Self::patterns)
/// (one pattern after the other, matches in [`es_core::pattern::find_matches`]'s order), asks
/// [`meet_requirements`](Self::meet_requirements) for each, and replaces the accepted ones by
/// [`replacement`](Self::replacement). The hooks get the graph mutably so that a binding can
/// hand it to code that reads it (they should not change it).
pub trait PatternFusionPass: Send {
    /// The patterns, computed once per run.
    fn patterns(&mut self, ctx: &mut PassContext) -> HookResult<Vec<Pattern>>;
    /// The matcher options (GE's `PatternMatcherConfig`).
    fn matcher_config(&self) -> PatternMatcherConfig {
        PatternMatcherConfig::default()
    }
    /// Beyond GE: how many rounds of match-and-rewrite to run at most. Round 2 and later run
    /// only when the previous round rewrote something (a fixpoint driver with a bound). GE
    /// runs one round.
    fn max_rounds(&self) -> usize {
        1
    }
    /// Whether match `m` of pattern number `pattern` should be replaced (default: yes).
    fn meet_requirements(
        &mut self,
        _graph: &mut Graph,
        _pattern: usize,
        _m: &MatchResult,
        _ctx: &mut PassContext,
    ) -> HookResult<bool> {
        Ok(true)
    }
    /// The graph that replaces match `m`: its inputs (Data nodes, index i) are connected to
    /// the match's inputs, its outputs replace the match's outputs, in order.
    fn replacement(
        &mut self,
        graph: &mut Graph,
        pattern: usize,
        m: &MatchResult,
        ctx: &mut PassContext,
    ) -> HookResult<Graph>;
    /// Both hooks for one match, as the executor calls them: [`meet_requirements`]
    /// (Self::meet_requirements), then, if it accepted, [`replacement`](Self::replacement).
    /// A binding may override it to make one crossing into its language per match; the
    /// outcome must be the one the default gives. The match is shared (`Arc`) so that a
    /// binding can hand it to its hooks' views without copying it.
    fn decide(
        &mut self,
        graph: &mut Graph,
        pattern: usize,
        m: &Arc<MatchResult>,
        ctx: &mut PassContext,
    ) -> HookResult<Decision> {
        match self.meet_requirements(graph, pattern, m, ctx) {
            Ok(true) => {}
            Ok(false) => return Ok(Decision::Rejected),
            Err(HookError::Skip(_)) => return Ok(Decision::Skipped { accepted: false }),
            Err(e) => return Err(e),
        }
        match self.replacement(graph, pattern, m, ctx) {
            Ok(g) => Ok(Decision::Replace(g)),
            Err(HookError::Skip(_)) => Ok(Decision::Skipped { accepted: true }),
            Err(e) => Err(e),
        }
    }
}

/// What the hooks of a pattern pass decided for one match ([`PatternFusionPass::decide`]).
#[derive(Debug, Clone)]
// `Replace` is the common outcome and is moved once: boxing it would add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Decision {
    /// `meet_requirements` returned false.
    Rejected,
    /// A hook asked to skip the match; `accepted`: `meet_requirements` had accepted it (the
    /// skip came from `replacement`).
    Skipped { accepted: bool },
    /// Accepted, and replaced by this graph.
    Replace(Graph),
}

/// GE's `DecomposePass`: each node of the given op types, in creation order, is replaced by a
/// subgraph whose inputs are the node's connected inputs (in input order) and whose outputs are
/// the node's outputs.
pub trait DecomposePass: Send {
    fn meet_requirements(
        &mut self,
        _graph: &mut Graph,
        _node: NodeId,
        _ctx: &mut PassContext,
    ) -> HookResult<bool> {
        Ok(true)
    }
    fn replacement(
        &mut self,
        graph: &mut Graph,
        node: NodeId,
        ctx: &mut PassContext,
    ) -> HookResult<Graph>;
}
