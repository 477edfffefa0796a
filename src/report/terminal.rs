//! The summary printed at the end of a run: the same figures as report.md, as plain text.

use super::Summary;

pub fn render(s: &Summary) -> String {
    let status = match s.incomplete_because() {
        None => "complete".to_string(),
        Some(why) => format!("INCOMPLETE: {why}"),
    };
    let mut t = format!("\n== dbq-bench: {} ({status}) ==\n", s.scenario.name);
    t.push_str(&format!(
        "design     {}\ndatabase   {} ({}){}\n",
        s.design.label(),
        s.database.provider,
        first_words(&s.database.server_version, 2),
        s.database.place_words()
    ));
    t.push_str(&format!(
        "throughput {:.1} jobs/s completed, {:.1} jobs/s enqueued over {:.1} s measured (offered {})\n",
        s.throughput.completed_per_s,
        s.throughput.enqueued_per_s,
        s.throughput.window_s,
        s.throughput.offered_per_s.map_or("max".to_string(), |r| format!("{r:.1} jobs/s"))
    ));
    for w in &s.library_workers {
        t.push_str(&format!("library    {}\n", w.line()));
    }
    t.push_str(&jobs(s));
    t.push_str(&format!("producers  {}\n", s.producers.describe()));
    if let Some(g) = &s.run.group_forming {
        t.push_str(&format!("workers    {}\n", g.sentence()));
    }
    if let Some(g) = &s.stalled_group {
        t.push_str(&format!("group      {}\n", g.sentence()));
    }
    if s.faults.any() {
        t.push_str(&format!(
            "faults     {} injected; {}\n",
            s.faults.events.len(),
            s.faults.counts_line()
        ));
        for e in &s.faults.events {
            t.push_str(&format!("  {}\n", e.recovery_line()));
        }
        if s.faults.orphaned_jobs.count > 0 {
            t.push_str(&format!("  {}\n", s.faults.orphaned_jobs.line()));
        }
    }
    t.push_str(&latency(s));
    if let Some(b) = &s.bystander {
        t.push_str(&format!("{}\n", b.sentence()));
    }
    t.push_str(&format!("{}\n", s.cost.line(s.database.engine)));
    if let Some(r) = &s.table_reads {
        t.push_str(&format!("reads      {}\n", r.line()));
    }
    t.push_str(&thresholds(s));
    if let Some(a) = &s.aborted_by_threshold {
        t.push_str(&format!("aborted    {a}\n"));
    }
    t.push_str(&format!("verdict    {}\n", s.verdict.text));
    if s.thresholds.is_empty() && s.verdict.state == super::verdict::VerdictState::DidNotKeepUp {
        t.push_str("           (the verdict does not set the exit status: give thresholds, e.g. --set 'thresholds={ \"throughput.completed_per_s\" = \">= 290\" }', to fail on it; exit 99)\n");
    }
    if let Some(l) = &s.limit {
        t.push_str(&format!("limit      {}\n", l.line()));
    }
    t.push_str(&format!("accounting {}\n", s.accounting.verdict));
    if let Some(h) = &s.harness {
        t.push_str(&format!("harness    {}\n", h.describe()));
    }
    t
}

fn jobs(s: &Summary) -> String {
    let j = &s.jobs;
    let unreported = match j.finished_without_report {
        0 => String::new(),
        n => format!(" (+{n} finished without a report)"),
    };
    let dropped = match j.dropped {
        0 => String::new(),
        n => format!(", {n} never sent (their phase ended first)"),
    };
    let by_queue = match j.lost_by_queue {
        0 => String::new(),
        n => format!(" ({n} by the queue itself)"),
    };
    let unrecorded = match j.unrecorded_successes {
        0 => String::new(),
        n => format!(" + {n} unrecorded successes (back in the library's queue)"),
    };
    format!(
        "jobs       {} enqueued = {} done + {} dead-lettered + {} unfinished + {} lost{by_queue}{unrecorded}; {} completions reported{unreported}, {} failed attempts, {} duplicate completions{dropped}\n",
        j.enqueued,
        j.done,
        j.dead_lettered,
        j.unfinished,
        j.lost,
        j.completed,
        j.failed_attempts,
        j.duplicate_completions
    )
}

fn latency(s: &Summary) -> String {
    let mut t =
        String::from("latency ms       count      p50      p90      p99    p99.9      max\n");
    for (name, l) in s.latency_ms.rows() {
        if l.count == 0 {
            // Nothing was timed: no percentile, not a zero.
            t.push_str(&format!(
                "  {name:<13} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                0, "–", "–", "–", "–", "–"
            ));
            continue;
        }
        t.push_str(&format!(
            "  {name:<13} {:>8} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2}\n",
            l.count, l.p50, l.p90, l.p99, l.p999, l.max
        ));
    }
    t
}

/// One line: all passed, or which failed.
fn thresholds(s: &Summary) -> String {
    if s.thresholds.is_empty() {
        return String::new();
    }
    let failed: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| {
            let on = t
                .phase
                .as_deref()
                .map_or(String::new(), |p| format!(" in {p}"));
            format!(
                "{} {}{on} (actual {})",
                t.metric,
                t.condition,
                t.actual.map_or("n/a".into(), super::number)
            )
        })
        .collect();
    let n = s.thresholds.len();
    if failed.is_empty() {
        format!("thresholds all {n} passed\n")
    } else {
        format!(
            "thresholds {} of {n} FAILED: {}\n",
            failed.len(),
            failed.join("; ")
        )
    }
}

fn first_words(s: &str, n: usize) -> String {
    s.split_whitespace().take(n).collect::<Vec<_>>().join(" ")
}
