//! Judging thresholds: each one's metric is looked up by name in summary.json (or in its
//! phase's entry) and compared with its limit.

use crate::metrics::{LatencyReport, Metric, MetricSet, PhaseCounts, Snapshot};
use crate::thresholds::Threshold;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    pub metric: String,
    /// The phase judged; `None` for the whole run.
    pub phase: Option<String>,
    pub condition: String,
    /// The figure found (`None`: not available, which fails the threshold).
    pub actual: Option<f64>,
    pub passed: bool,
}

fn lookup(target: &Value, path: &[&str]) -> Option<f64> {
    let v = path.iter().try_fold(target, |v, key| v.get(key))?;
    v.as_f64().or_else(|| v.as_bool().map(|b| b as u8 as f64))
}

fn judge_one(t: &Threshold, target: Option<&Value>) -> ThresholdResult {
    let actual = target.and_then(|v| lookup(v, &t.path()));
    ThresholdResult {
        metric: t.metric.clone(),
        phase: t.phase.clone(),
        condition: t.condition.clone(),
        actual,
        passed: actual.is_some_and(|a| t.op.holds(a, t.limit)),
    }
}

/// Judges every threshold against a finished run's summary (as JSON).
pub fn judge(thresholds: &[Threshold], summary: &Value) -> Vec<ThresholdResult> {
    thresholds
        .iter()
        .map(|t| {
            let target = match &t.phase {
                None => Some(summary),
                Some(name) => summary["phases"]
                    .as_array()
                    .and_then(|ps| ps.iter().find(|p| p["name"] == name.as_str())),
            };
            judge_one(t, target)
        })
        .collect()
}

/// Judges, on the figures so far, the thresholds that can already be judged after
/// `ended` phases: those of the phases that have ended, and the whole run's latency and
/// throughput over the measured phases that have ended. Job and fault counts of the whole
/// run are only known at the end, so they are not judged here. The snapshot is taken at
/// least `waited` after the last ended phase's end (see [`censored`]).
pub fn judge_so_far(
    thresholds: &[Threshold],
    snapshot: &Snapshot,
    ended: &[String],
    waited: std::time::Duration,
) -> Vec<ThresholdResult> {
    let metrics: Vec<MetricSet> = (0..snapshot.windows.len())
        .map(|i| censored(&snapshot.counts[i], &snapshot.metrics[i], waited))
        .collect();
    let figures = |counts: &PhaseCounts, metrics: &MetricSet, seconds: f64| {
        let per_s = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        json!({
            "latency_ms": LatencyReport::of(metrics),
            "jobs": counts,
            "throughput": { "enqueued_per_s": per_s(counts.enqueued), "completed_per_s": per_s(counts.completed) },
        })
    };
    let seconds =
        |i: usize| (snapshot.windows[i].end_us - snapshot.windows[i].start_us) as f64 / 1e6;
    let mut run_counts = PhaseCounts::default();
    let mut run_metrics = MetricSet::default();
    let mut run_seconds = 0.0;
    for (i, w) in snapshot.windows.iter().enumerate() {
        if w.measured && ended.contains(&w.name) {
            run_counts.add(&snapshot.counts[i]);
            run_metrics.add(&metrics[i]);
            run_seconds += seconds(i);
        }
    }
    let run = figures(&run_counts, &run_metrics, run_seconds);
    thresholds
        .iter()
        .filter_map(|t| match &t.phase {
            None if !t.metric.starts_with("jobs.")
                && !t.metric.starts_with("faults.")
                && run_seconds > 0.0 =>
            {
                Some(judge_one(t, Some(&run)))
            }
            Some(name) if ended.contains(name) => {
                let i = snapshot.windows.iter().position(|w| &w.name == name)?;
                Some(judge_one(
                    t,
                    Some(&figures(&snapshot.counts[i], &metrics[i], seconds(i))),
                ))
            }
            _ => None,
        })
        .collect()
}

/// A phase's figures as far as they can be known `waited` after its end. Its jobs that have
/// not finished yet (enqueued, less those completed and dead-lettered) count in
/// `end_to_end` at the least wait each has had, `waited`: a lower bound, so a phase whose
/// slowest jobs are still queued cannot pass a latency objective on its fast ones alone,
/// and one whose jobs all finished is judged on what was measured.
fn censored(counts: &PhaseCounts, metrics: &MetricSet, waited: std::time::Duration) -> MetricSet {
    let finished = metrics.get(Metric::EndToEnd).len() + counts.dead_lettered;
    let unfinished = counts.enqueued.saturating_sub(finished);
    let mut known = metrics.clone();
    if unfinished > 0 {
        known.record_n(Metric::EndToEnd, waited.as_micros() as u64, unfinished);
    }
    known
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::parse;

    #[test]
    fn thresholds_are_judged_on_the_run_or_their_phase() {
        let summary = json!({
            "latency_ms": { "end_to_end": { "p99": 120.0 } },
            "jobs": { "lost": 0 },
            "verdict": { "kept_up": true },
            "phases": [{ "name": "steady", "throughput": { "completed_per_s": 290.0 } }],
        });
        let ts = vec![
            parse("end_to_end.p99", "< 250ms", None).unwrap(),
            parse("jobs.lost", "== 0", None).unwrap(),
            parse("throughput.completed_per_s", ">= 300", Some("steady")).unwrap(),
            parse("throughput.completed_per_s", ">= 1", Some("missing")).unwrap(),
        ];
        let r = judge(&ts, &summary);
        assert_eq!(
            r.iter().map(|r| r.passed).collect::<Vec<_>>(),
            vec![true, true, false, false]
        );
        assert_eq!(r[2].actual, Some(290.0));
        assert_eq!(r[3].actual, None);
    }

    /// Judged a second after its end, a phase whose slowest jobs are still queued fails a
    /// latency objective that its finished jobs alone would meet; once they finish, it passes.
    #[test]
    fn jobs_still_queued_count_against_a_latency_objective_so_far() {
        use crate::metrics::{PhaseWindow, WindowKind};
        let window = PhaseWindow::new("w", WindowKind::Phase, 0, 30_000_000, true);
        let snapshot = |finished: u64| {
            let mut metrics = MetricSet::default();
            metrics.record_n(Metric::EndToEnd, 10_000, finished);
            let counts = PhaseCounts {
                enqueued: 1000,
                completed: finished,
                ..PhaseCounts::default()
            };
            Snapshot {
                windows: vec![window.clone()],
                counts: vec![counts],
                metrics: vec![metrics],
            }
        };
        let ts = vec![parse("end_to_end.p99", "< 250ms", Some("w")).unwrap()];
        let ended = ["w".to_string()];
        let second = std::time::Duration::from_secs(1);
        // 980 of 1,000 finished in 10 ms; 20 (2%) still queued: p99 is at least 1 s.
        let r = judge_so_far(&ts, &snapshot(980), &ended, second);
        assert!(!r[0].passed && r[0].actual.unwrap() >= 1000.0, "{r:?}");
        // 995 finished: the 5 still queued are within the 1% the p99 leaves out.
        let r = judge_so_far(&ts, &snapshot(995), &ended, second);
        assert!(r[0].passed, "{r:?}");
    }
}
