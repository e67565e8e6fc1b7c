//! Session and graph options: GE's string options (`ge.device`, `ge.graphMode`, ...) parsed
//! over the `GE_*` environment defaults. Sessions and backends both read them.

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Where graphs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Acl,
    /// ACL when its libraries load, otherwise the CPU (with a log line saying why).
    Auto,
}

/// Session or graph options (GE's string options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub device: Device,
    /// Capture and replay plans (`ge.graphMode` = "on"), or run eagerly ("off").
    pub graph_mode: bool,
    /// Plans kept per graph (`ge.graphCacheCapacity`).
    pub cache_capacity: usize,
    /// Threads a run's kernels may use (`ge.threads`; default: the machine's parallelism).
    pub threads: usize,
    /// The ACL device (`ge.exec.deviceId`, GE's option; default 0).
    pub device_id: i32,
}

/// The option keys a session or graph accepts.
pub const OPTION_KEYS: [&str; 5] = [
    "ge.device",
    "ge.exec.deviceId",
    "ge.graphMode",
    "ge.graphCacheCapacity",
    "ge.threads",
];

/// The cache capacity when neither an option nor `GE_GRAPH_CACHE_CAPACITY` sets it.
pub const DEFAULT_CACHE_CAPACITY: usize = 12;

fn parse_mode(v: &str, from: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(Error::Option(format!(
            "{from} must be on or off, got '{v}'"
        ))),
    }
}

fn parse_positive(v: &str, from: &str) -> Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(Error::Option(format!(
            "{from} must be a positive integer, got '{v}'"
        ))),
    }
}

impl Options {
    /// Defaults: CPU, graph mode from `GE_GRAPH_MODE` (on unless "off"), capacity from
    /// `GE_GRAPH_CACHE_CAPACITY` (12), threads from `GE_THREADS` (the machine's available
    /// parallelism).
    pub fn from_env() -> Result<Options> {
        let graph_mode = match std::env::var("GE_GRAPH_MODE") {
            Ok(v) if !v.is_empty() => parse_mode(&v, "GE_GRAPH_MODE")?,
            _ => true,
        };
        let cache_capacity = match std::env::var("GE_GRAPH_CACHE_CAPACITY") {
            Ok(v) if !v.is_empty() => parse_positive(&v, "GE_GRAPH_CACHE_CAPACITY")?,
            _ => DEFAULT_CACHE_CAPACITY,
        };
        let threads = match std::env::var("GE_THREADS") {
            Ok(v) if !v.is_empty() => parse_positive(&v, "GE_THREADS")?,
            _ => crate::par::default_threads(),
        };
        Ok(Options {
            device: Device::Cpu,
            graph_mode,
            cache_capacity,
            threads,
            device_id: 0,
        })
    }

    /// These options with `overrides` applied; an unknown key is an error that lists the
    /// known ones.
    pub fn with(&self, overrides: &BTreeMap<String, String>) -> Result<Options> {
        let mut o = self.clone();
        for (k, v) in overrides {
            match k.as_str() {
                "ge.device" => {
                    o.device = match v.to_ascii_lowercase().as_str() {
                        "cpu" => Device::Cpu,
                        "acl" => Device::Acl,
                        "auto" => Device::Auto,
                        _ => {
                            return Err(Error::Option(format!(
                                "ge.device must be cpu, acl or auto, got '{v}'"
                            )))
                        }
                    }
                }
                "ge.graphMode" => o.graph_mode = parse_mode(v, "ge.graphMode")?,
                "ge.graphCacheCapacity" => {
                    o.cache_capacity = parse_positive(v, "ge.graphCacheCapacity")?
                }
                "ge.threads" => o.threads = parse_positive(v, "ge.threads")?,
                "ge.exec.deviceId" => {
                    o.device_id = match v.trim().parse::<i32>() {
                        Ok(n) if n >= 0 => n,
                        _ => {
                            return Err(Error::Option(format!(
                                "ge.exec.deviceId must be a device number (0 or more), got '{v}'"
                            )))
                        }
                    }
                }
                _ => {
                    return Err(Error::Option(format!(
                        "unknown option '{k}' (known: {})",
                        OPTION_KEYS.join(", ")
                    )))
                }
            }
        }
        Ok(o)
    }
}
