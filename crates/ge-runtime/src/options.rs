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
    /// The most bytes a plan may need at its peak, and one buffer may take, in a run
    /// (`ge.memoryLimit`; default [`default_memory_limit`]).
    pub memory_limit: u64,
    /// GE's rank table (`ge.exec.rankTableFile`), checked against the MPI world.
    pub rank_table_file: Option<String>,
    /// This process's rank as GE's option gives it (`ge.exec.rankId`), checked against MPI's.
    pub rank_id: Option<usize>,
}

/// The option keys a session or graph accepts.
pub const OPTION_KEYS: [&str; 10] = [
    "ge.device",
    "ge.exec.deviceId",
    "ge.exec.hcclExecuteTimeOut",
    "ge.exec.hcomGrouplist",
    "ge.exec.rankTableFile",
    "ge.exec.rankId",
    "ge.graphMode",
    "ge.graphCacheCapacity",
    "ge.threads",
    "ge.memoryLimit",
];

/// The share of the available memory the default limit allows, in percent.
pub const DEFAULT_MEMORY_PERCENT: u64 = 80;

/// `MemTotal` and `MemAvailable` of `/proc/meminfo` (Linux), in bytes.
fn meminfo() -> Option<(u64, u64)> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let rest = line[name.len()..].trim_start_matches(':').trim();
        let kb = rest.strip_suffix("kB").unwrap_or(rest).trim();
        kb.parse::<u64>().ok()?.checked_mul(1024)
    };
    Some((field("MemTotal")?, field("MemAvailable")?))
}

/// The default memory limit: 80% of the memory available (`MemAvailable` of `/proc/meminfo`)
/// when the process first asks, the same for every later session (so that errors naming it
/// read the same); where that cannot be read (not Linux), no limit (`u64::MAX`).
pub fn default_memory_limit() -> u64 {
    static DEFAULT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(|| {
        meminfo().map_or(u64::MAX, |(_, avail)| {
            percent_of(avail, DEFAULT_MEMORY_PERCENT as f64)
        })
    })
}

fn percent_of(bytes: u64, percent: f64) -> u64 {
    ((bytes as f64) * percent / 100.0) as u64
}

/// A memory limit as `ge.memoryLimit` takes it: bytes (a positive integer), or `"NN%"` (more
/// than 0, at most 100, decimals allowed) of the physical memory (`MemTotal`).
fn parse_memory_limit(v: &str, from: &str) -> Result<u64> {
    parse_memory_limit_with(v, from, meminfo().map(|(total, _)| total))
}

fn parse_memory_limit_with(v: &str, from: &str, total: Option<u64>) -> Result<u64> {
    let t = v.trim();
    if let Some(p) = t.strip_suffix('%') {
        let percent = match p.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 100.0 => x,
            _ => {
                return Err(Error::Option(format!(
                    "{from} must be a number of bytes or a percentage in (0, 100] of the \
                     physical memory, got '{v}'"
                )))
            }
        };
        let Some(total) = total else {
            return Err(Error::Option(format!(
                "{from}={v}: a percentage needs the machine's memory size, read from \
                 /proc/meminfo, which this system does not have; give a number of bytes"
            )));
        };
        return Ok(percent_of(total, percent).max(1));
    }
    match t.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(Error::Option(format!(
            "{from} must be a number of bytes (a positive integer) or a percentage such as \
             '80%', got '{v}'"
        ))),
    }
}

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
    /// parallelism), memory limit from `GE_MEMORY_LIMIT` ([`default_memory_limit`]).
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
        let memory_limit = match std::env::var("GE_MEMORY_LIMIT") {
            Ok(v) if !v.is_empty() => parse_memory_limit(&v, "GE_MEMORY_LIMIT")?,
            _ => default_memory_limit(),
        };
        Ok(Options {
            device: Device::Cpu,
            graph_mode,
            cache_capacity,
            threads,
            device_id: 0,
            memory_limit,
            rank_table_file: None,
            rank_id: None,
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
                "ge.memoryLimit" => o.memory_limit = parse_memory_limit(v, "ge.memoryLimit")?,
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
                // Process-wide, as HCCL's timeout is: the value given last, at any level, holds
                // for every collective of the process (crate::collective::timeout).
                "ge.exec.hcclExecuteTimeOut" => {
                    crate::collective::set_timeout(crate::collective::parse_timeout(v, k)?)
                }
                "ge.exec.rankTableFile" => o.rank_table_file = Some(v.clone()),
                // GE's groups from rank lists, created where the option is given (every rank
                // of a group gives it).
                "ge.exec.hcomGrouplist" => crate::collective::create_groups_from_option(v)?,
                "ge.exec.rankId" => {
                    o.rank_id = Some(v.trim().parse::<usize>().map_err(|_| {
                        Error::Option(format!(
                            "ge.exec.rankId must be a rank number (0 or more), got '{v}'"
                        ))
                    })?)
                }
                _ => {
                    return Err(Error::Option(format!(
                        "unknown option '{k}' (known: {})",
                        OPTION_KEYS.join(", ")
                    )))
                }
            }
        }
        if overrides.contains_key("ge.exec.rankTableFile")
            || overrides.contains_key("ge.exec.rankId")
        {
            let device = overrides
                .contains_key("ge.exec.deviceId")
                .then_some(o.device_id);
            crate::collective::check_rank_options(
                &*crate::collective::world()?,
                o.rank_table_file.as_deref(),
                o.rank_id,
                device,
            )?;
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24684092 kB\nMemFree:  1 kB\nMemAvailable:   21947132 kB\n";
        assert_eq!(
            parse_meminfo(text),
            Some((24684092 * 1024, 21947132 * 1024))
        );
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn memory_limits_in_bytes_and_percent() {
        let p = |v: &str| parse_memory_limit_with(v, "ge.memoryLimit", Some(16 * GIB));
        assert_eq!(p("1000").unwrap(), 1000);
        assert_eq!(p(" 4294967296 ").unwrap(), 4 * GIB);
        assert_eq!(p("50%").unwrap(), 8 * GIB);
        assert_eq!(p("100%").unwrap(), 16 * GIB);
        assert_eq!(p("12.5%").unwrap(), 2 * GIB);
        for bad in ["0", "-5", "1.5", "abc", "", "0%", "101%", "-1%", "%", "4GB"] {
            let e = p(bad).unwrap_err();
            assert!(matches!(e, Error::Option(_)), "{bad}: {e}");
            assert!(e.to_string().contains("ge.memoryLimit"), "{e}");
        }
        let e = parse_memory_limit_with("50%", "ge.memoryLimit", None).unwrap_err();
        assert!(e.to_string().contains("/proc/meminfo"), "{e}");
    }

    #[test]
    fn the_option_overrides_the_default() {
        let base = Options::from_env().unwrap();
        assert!(base.memory_limit > 0);
        let o = base
            .with(&BTreeMap::from([("ge.memoryLimit".into(), "12345".into())]))
            .unwrap();
        assert_eq!(o.memory_limit, 12345);
        let e = base
            .with(&BTreeMap::from([("ge.memoryLimit".into(), "lots".into())]))
            .unwrap_err();
        assert!(matches!(e, Error::Option(_)));
    }
}
