//! Thresholds: pass/fail conditions on a run's figures, like k6's. Written in the scenario
//! as `"metric" = "condition"`, for the whole run (`[thresholds]`) or one phase
//! (`thresholds = { … }` in a `[[phases]]` entry):
//!
//! ```toml
//! [thresholds]
//! "end_to_end.p99" = "< 250ms"
//! "throughput.completed_per_s" = ">= 300"
//! "jobs.lost" = "== 0"
//! ```
//!
//! A metric is named as in summary.json: `<latency metric>.<stat>` (milliseconds; a
//! duration such as `"250ms"` may be used), `throughput.*`, `jobs.*`, and for the whole run
//! `faults.*`. This module validates them (the scenario's plan parses them here); `report::thresholds`
//! judges them. Plain data below both.

use serde::{Deserialize, Serialize};
use std::fmt;

pub const LATENCY_METRICS: [&str; 7] = [
    "enqueue",
    "schedule_lag",
    "claim",
    "queue_wait",
    "handler",
    "end_to_end",
    "bystander",
];
pub const LATENCY_STATS: [&str; 7] = ["count", "p50", "p90", "p99", "p999", "max", "mean"];
pub const THROUGHPUT: [&str; 2] = ["enqueued_per_s", "completed_per_s"];
/// `jobs.*` for the whole run (summary.json `jobs`).
pub const RUN_JOBS: [&str; 11] = [
    "enqueued",
    "completed",
    "dead_lettered",
    "failed_attempts",
    "lost",
    "unfinished",
    "duplicate_completions",
    "enqueue_errors",
    "worker_errors",
    "sent_late",
    "reaped",
];
/// `jobs.*` for one phase (summary.json `phases[].jobs`).
pub const PHASE_JOBS: [&str; 10] = [
    "enqueued",
    "completed",
    "failed",
    "dead_lettered",
    "claims",
    "sent_late",
    "enqueue_errors",
    "worker_errors",
    "worker_crashes",
    "reaped",
];
/// `faults.*` for the whole run.
pub const FAULTS: [&str; 12] = [
    "handler_errors",
    "retries",
    "dead_lettered",
    "worker_crashes",
    "reaped",
    "backends_killed",
    "server_restarts",
    "enqueue_retries",
    "in_doubt_enqueues",
    "rolled_back_enqueues",
    "duplicate_executions",
    "duplicate_completions",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
}

impl Op {
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Gt => actual > limit,
            Op::Ge => actual >= limit,
            Op::Eq => actual == limit,
            Op::Ne => actual != limit,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }
}

/// A validated threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The metric as written, e.g. `end_to_end.p99`.
    pub metric: String,
    /// The phase it is judged on; `None` for the whole run (its measured phases).
    pub phase: Option<String>,
    pub op: Op,
    /// The limit, in milliseconds for latencies.
    pub limit: f64,
    /// The condition as written, e.g. `< 250ms`.
    pub condition: String,
}

impl Threshold {
    /// Where the metric lives in summary.json (for a phase: inside its `phases[]` entry).
    pub fn path(&self) -> Vec<&str> {
        let (head, field) = self.metric.split_once('.').unwrap_or((&self.metric, ""));
        if LATENCY_METRICS.contains(&head) {
            vec!["latency_ms", head, field]
        } else {
            vec![head, field]
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.phase {
            Some(p) => write!(
                f,
                "{} {} {} (phase {p})",
                self.metric,
                self.op.as_str(),
                self.limit
            ),
            None => write!(f, "{} {} {}", self.metric, self.op.as_str(), self.limit),
        }
    }
}

/// Checks one `metric = condition`; the error is the reason (the caller names the key).
pub fn parse(metric: &str, condition: &str, phase: Option<&str>) -> Result<Threshold, String> {
    let (head, field) = metric
        .split_once('.')
        .ok_or_else(|| format!("unknown metric \"{metric}\" ({})", known(phase.is_some())))?;
    let latency = LATENCY_METRICS.contains(&head);
    let known_field = match head {
        _ if latency => LATENCY_STATS.contains(&field),
        "throughput" => THROUGHPUT.contains(&field),
        "jobs" if phase.is_some() => PHASE_JOBS.contains(&field),
        "jobs" => RUN_JOBS.contains(&field),
        "faults" if phase.is_none() => FAULTS.contains(&field),
        _ => false,
    };
    if !known_field {
        return Err(format!(
            "unknown metric \"{metric}\" ({})",
            known(phase.is_some())
        ));
    }
    let c = condition.trim();
    let (op, rest) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ]
    .iter()
    .find_map(|(p, op)| c.strip_prefix(p).map(|rest| (*op, rest.trim())))
    .ok_or_else(|| format!("condition \"{condition}\" must start with <, <=, >, >=, == or !="))?;
    let limit = match rest.parse::<f64>() {
        Ok(v) if v.is_finite() => v,
        _ if latency && field != "count" => humantime::parse_duration(rest)
            .map(|d| d.as_secs_f64() * 1e3)
            .map_err(|_| format!("\"{rest}\" is neither a number of milliseconds nor a duration such as \"250ms\""))?,
        _ => return Err(format!("\"{rest}\" is not a number")),
    };
    Ok(Threshold {
        metric: metric.to_string(),
        phase: phase.map(String::from),
        op,
        limit,
        condition: c.to_string(),
    })
}

fn known(phase: bool) -> String {
    let jobs = if phase {
        PHASE_JOBS.join("|")
    } else {
        RUN_JOBS.join("|")
    };
    let faults = if phase {
        String::new()
    } else {
        format!(", faults.{{{}}}", FAULTS.join("|"))
    };
    format!(
        "known: {{{}}}.{{{}}}, throughput.{{{}}}, jobs.{{{jobs}}}{faults}",
        LATENCY_METRICS.join("|"),
        LATENCY_STATS.join("|"),
        THROUGHPUT.join("|")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_parse_with_units() {
        let t = parse("end_to_end.p99", "< 250ms", None).unwrap();
        assert_eq!((t.op, t.limit), (Op::Lt, 250.0));
        assert_eq!(t.path(), vec!["latency_ms", "end_to_end", "p99"]);
        let t = parse("end_to_end.max", "<= 1.5s", Some("steady")).unwrap();
        assert_eq!(t.limit, 1500.0);
        let t = parse("throughput.completed_per_s", ">=300", None).unwrap();
        assert_eq!((t.op, t.limit), (Op::Ge, 300.0));
        assert_eq!(t.path(), vec!["throughput", "completed_per_s"]);
        assert!(parse("jobs.lost", "== 0", None).unwrap().op.holds(0.0, 0.0));
    }

    #[test]
    fn unknown_metrics_and_bad_conditions_say_why() {
        assert!(
            parse("end_to_end.p98", "< 1", None)
                .unwrap_err()
                .contains("unknown metric")
        );
        assert!(
            parse("latency.p99", "< 1", None)
                .unwrap_err()
                .contains("known:")
        );
        assert!(
            parse("jobs.lost", "== 0", Some("p")).is_err(),
            "lost is only known for the whole run"
        );
        assert!(parse("faults.reaped", "== 0", Some("p")).is_err());
        assert!(
            parse("jobs.lost", "0", None)
                .unwrap_err()
                .contains("must start with")
        );
        assert!(
            parse("jobs.lost", "< soon", None)
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            parse("claim.p50", "< soon", None)
                .unwrap_err()
                .contains("duration")
        );
    }
}
