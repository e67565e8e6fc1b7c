//! Pass descriptors (kind, stage, names) and the registry of passes with their factories.

use crate::hooks::{DecomposePass, FusionPass, HookError, PassError, PatternFusionPass};
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::Arc;

/// An enum of unit variants with a fixed name each: `VALUES` (every variant, in declaration
/// order), `as_str`, `parse` (the inverse of `as_str`) and `Display` (the name).
macro_rules! named_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        pub enum $name {
            $($variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const VALUES: [$name; [$($text),+].len()] = [$($name::$variant),+];
            /// The name of the value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
            /// The value named `s`, if any.
            pub fn parse(s: &str) -> Option<$name> {
                $name::VALUES.into_iter().find(|v| v.as_str() == s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum! {
    /// The kind of a pass; the names are GE's descriptor kinds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum PassKind {
        FusionBase => "fusion_base",
        PatternFusion => "pattern_fusion",
        Decompose => "decompose",
    }
}

named_enum! {
    /// When a pass runs in the compile pipeline; the names are GE's stage names and `VALUES`
    /// is the pipeline order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum PassStage {
        BeforeInferShape => "BeforeInferShape",
        AfterInferShape => "AfterInferShape",
        AfterBuiltinFusionPass => "AfterBuiltinFusionPass",
        AfterOriginGraphOptimize => "AfterOriginGraphOptimize",
    }
}

/// What a pass is. `descriptor_key` = "module:class:name" identifies it; `pass_name` is unique
/// too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassDescriptor {
    pub descriptor_key: String,
    pub pass_name: String,
    pub module_name: String,
    pub class_name: String,
    pub kind: PassKind,
    pub stage: PassStage,
    /// The op types a decompose pass replaces (empty for the other kinds).
    pub op_types: Vec<String>,
}

impl PassDescriptor {
    /// A descriptor with `descriptor_key` built as "module:class:name".
    pub fn new(
        pass_name: impl Into<String>,
        module_name: impl Into<String>,
        class_name: impl Into<String>,
        kind: PassKind,
        stage: PassStage,
        op_types: Vec<String>,
    ) -> Self {
        let (pass_name, module_name, class_name) =
            (pass_name.into(), module_name.into(), class_name.into());
        PassDescriptor {
            descriptor_key: format!("{module_name}:{class_name}:{pass_name}"),
            pass_name,
            module_name,
            class_name,
            kind,
            stage,
            op_types,
        }
    }
}

/// A fresh pass object, of one of the three kinds.
pub enum PassInstance {
    Fusion(Box<dyn FusionPass>),
    Pattern(Box<dyn PatternFusionPass>),
    Decompose(Box<dyn DecomposePass>),
}

impl PassInstance {
    pub fn kind(&self) -> PassKind {
        match self {
            PassInstance::Fusion(_) => PassKind::FusionBase,
            PassInstance::Pattern(_) => PassKind::PatternFusion,
            PassInstance::Decompose(_) => PassKind::Decompose,
        }
    }
}

/// Makes a fresh instance for each run of a pass (so a pass's own fields are scratch space for
/// one run).
pub type PassFactory = Arc<dyn Fn() -> Result<PassInstance, HookError> + Send + Sync>;

/// Registered passes, in registration order.
#[derive(Clone, Default)]
pub struct PassRegistry {
    pub(crate) entries: Vec<(PassDescriptor, PassFactory)>,
    by_key: FxHashMap<String, usize>,
    by_name: FxHashMap<String, usize>,
}

impl fmt::Debug for PassRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.0.descriptor_key))
            .finish()
    }
}

impl PassRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a pass. A second pass with the same `descriptor_key` or `pass_name` is an
    /// error, as is a decompose pass without op types.
    pub fn register(
        &mut self,
        descriptor: PassDescriptor,
        factory: PassFactory,
    ) -> Result<(), PassError> {
        if descriptor.pass_name.is_empty() {
            return Err(PassError::Registry("a pass name must not be empty".into()));
        }
        if self.by_key.contains_key(&descriptor.descriptor_key) {
            return Err(PassError::Registry(format!(
                "pass descriptor_key already registered: {}",
                descriptor.descriptor_key
            )));
        }
        if self.by_name.contains_key(&descriptor.pass_name) {
            return Err(PassError::Registry(format!(
                "pass name already registered: {}",
                descriptor.pass_name
            )));
        }
        if descriptor.kind == PassKind::Decompose
            && (descriptor.op_types.is_empty() || descriptor.op_types.iter().any(String::is_empty))
        {
            return Err(PassError::Registry(format!(
                "decompose pass '{}' needs a non-empty list of non-empty op types",
                descriptor.pass_name
            )));
        }
        let i = self.entries.len();
        self.by_key.insert(descriptor.descriptor_key.clone(), i);
        self.by_name.insert(descriptor.pass_name.clone(), i);
        log::debug!(
            "registered pass {} ({}, {})",
            descriptor.descriptor_key,
            descriptor.kind,
            descriptor.stage
        );
        self.entries.push((descriptor, factory));
        Ok(())
    }

    /// Removes one pass by descriptor key; returns whether it was registered.
    pub fn unregister(&mut self, descriptor_key: &str) -> bool {
        let Some(i) = self.by_key.get(descriptor_key).copied() else {
            return false;
        };
        self.entries.remove(i);
        self.reindex();
        true
    }

    fn reindex(&mut self) {
        self.by_key.clear();
        self.by_name.clear();
        for (i, (d, _)) in self.entries.iter().enumerate() {
            self.by_key.insert(d.descriptor_key.clone(), i);
            self.by_name.insert(d.pass_name.clone(), i);
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_key.clear();
        self.by_name.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The descriptors, in registration order.
    pub fn descriptors(&self) -> impl Iterator<Item = &PassDescriptor> {
        self.entries.iter().map(|e| &e.0)
    }

    pub fn get(&self, descriptor_key: &str) -> Option<&PassDescriptor> {
        self.by_key.get(descriptor_key).map(|&i| &self.entries[i].0)
    }

    pub fn get_by_name(&self, pass_name: &str) -> Option<&PassDescriptor> {
        self.by_name.get(pass_name).map(|&i| &self.entries[i].0)
    }

    /// The entry for a pass name or a descriptor key.
    pub(crate) fn lookup(&self, name_or_key: &str) -> Option<usize> {
        self.by_name
            .get(name_or_key)
            .or_else(|| self.by_key.get(name_or_key))
            .copied()
    }
}
