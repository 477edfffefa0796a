//! Faults a phase can inject, as written in a scenario (`[[phases.faults]]`, chosen by
//! `kind`). The `faults` module carries them out; docs/reference.md's "Faults" section explains each.

use super::values::HumanDuration;
use crate::backend::engine::ShutdownMode;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// A worker task dies at a chosen point of its job: its connection is dropped without
    /// commit or rollback. Needs `consumers.processes = false`.
    CrashWorkers {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        every: Option<HumanDuration>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
        #[serde(default = "one")]
        count: u32,
        #[serde(default)]
        at: CrashPoint,
    },
    /// SIGKILL worker processes. Needs `consumers.processes = true`.
    KillWorkers {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        every: Option<HumanDuration>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
        #[serde(default = "one")]
        count: u32,
    },
    /// SIGSTOP worker processes (connection open, nothing answering), SIGCONT them later.
    /// Needs `consumers.processes = true`.
    FreezeWorkers {
        #[serde(default = "one")]
        count: u32,
        /// Delay from the phase start.
        #[serde(default = "zero")]
        after: HumanDuration,
        /// How long they stay frozen (default: until the phase ends).
        #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
        hold: Option<HumanDuration>,
    },
    /// Every worker stops taking jobs for `for` (a deploy, a GC pause): a task worker
    /// finishes the job in hand and waits; worker processes (a library's, or the harness's
    /// with `consumers.processes`) are stopped (SIGSTOP) and continued (SIGCONT).
    PauseWorkers {
        /// Delay from the phase start.
        #[serde(default = "zero")]
        after: HumanDuration,
        /// How long they pause.
        #[serde(default = "one_second", rename = "for")]
        hold: HumanDuration,
    },
    /// `pg_terminate_backend` on the connections of workers, producers, or both.
    KillBackends {
        #[serde(default)]
        target: BackendTarget,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        every: Option<HumanDuration>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<f64>,
        #[serde(default = "one")]
        count: u32,
    },
    /// Stop the server and start it again (providers that own the server: container, local).
    RestartServer {
        /// Delay from the phase start.
        #[serde(default = "zero")]
        after: HumanDuration,
        /// How long the server stays down.
        #[serde(default = "one_second")]
        down_for: HumanDuration,
        #[serde(default)]
        mode: ShutdownMode,
    },
    /// A session holds a transaction with an XID open from the phase's start, pinning the
    /// xmin horizon so VACUUM cannot remove dead tuples: for the whole phase, or `for` this
    /// long (which may run past the phase's end, through the phases after it).
    IdleInTransaction {
        #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
        hold: Option<HumanDuration>,
    },
    /// Autovacuum kept off the queue table from the phase's start, for the whole phase or
    /// `for` this long (which may run past the phase's end), then one VACUUM paced as
    /// autovacuum paces its own and autovacuum back on: a fresh table whose first vacuum
    /// comes as late as the server lets it (one `autovacuum_naptime`). PostgreSQL only.
    DelayVacuum {
        #[serde(default, rename = "for", skip_serializing_if = "Option::is_none")]
        hold: Option<HumanDuration>,
    },
    /// REPEATABLE READ transactions scanning the queue table for the whole phase.
    ActiveReaders {
        #[serde(default = "one")]
        count: u32,
    },
    /// Idle connections held for the whole phase.
    PoolExhaustion { connections: u32 },
    /// One ANALYZE of the queue table `after` the phase starts: fresh planner statistics
    /// mid-run, as a manual ANALYZE (or autovacuum's) gives them. Prepared statements planned
    /// on older statistics are planned again at their next execution.
    Analyze {
        /// Delay from the phase start.
        #[serde(default = "zero")]
        after: HumanDuration,
    },
}

impl FaultSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            FaultSpec::CrashWorkers { .. } => "crash_workers",
            FaultSpec::KillWorkers { .. } => "kill_workers",
            FaultSpec::FreezeWorkers { .. } => "freeze_workers",
            FaultSpec::PauseWorkers { .. } => "pause_workers",
            FaultSpec::KillBackends { .. } => "kill_backends",
            FaultSpec::RestartServer { .. } => "restart_server",
            FaultSpec::IdleInTransaction { .. } => "idle_in_transaction",
            FaultSpec::DelayVacuum { .. } => "delay_vacuum",
            FaultSpec::ActiveReaders { .. } => "active_readers",
            FaultSpec::PoolExhaustion { .. } => "pool_exhaustion",
            FaultSpec::Analyze { .. } => "analyze",
        }
    }

    /// How a repeated fault is scheduled, for the kinds that repeat.
    pub fn repeat(&self) -> Option<Repeat> {
        let (every, rate) = match self {
            FaultSpec::CrashWorkers { every, rate, .. }
            | FaultSpec::KillWorkers { every, rate, .. }
            | FaultSpec::KillBackends { every, rate, .. } => (every, rate),
            _ => return None,
        };
        match (every, rate) {
            (Some(e), None) => Some(Repeat::Every(e.0)),
            (None, Some(r)) => Some(Repeat::Rate(*r)),
            _ => None,
        }
    }
}

/// When a repeated fault fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repeat {
    /// Periodically, the first time one period after the phase starts.
    Every(Duration),
    /// At random, on average this many times per second (a Poisson process).
    Rate(f64),
}

/// Where in its job a crashing worker dies.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CrashPoint {
    /// Right after the claim returned the job.
    AfterClaim,
    /// Halfway through the handler.
    #[default]
    MidHandler,
    /// After the handler, before the job's `done` is committed.
    AfterHandler,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BackendTarget {
    #[default]
    Workers,
    Producers,
    All,
}

fn one() -> u32 {
    1
}
fn zero() -> HumanDuration {
    HumanDuration(Duration::ZERO)
}
fn one_second() -> HumanDuration {
    HumanDuration::from_secs(1)
}
