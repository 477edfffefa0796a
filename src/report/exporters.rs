//! The files of a run's results. Each is small and independent; all read the same
//! `RunResults` (`report.md` and `report.html` through the document's Markdown and page).

use super::artifact::Exporter;
use super::{RunResults, Summary, capitalised, ms};
use crate::metrics::LatencySummary;
use anyhow::Result;
use std::io::Write;

/// `scenario.resolved.toml`: the scenario as run, every default filled in.
pub struct ResolvedScenario;

impl Exporter<RunResults> for ResolvedScenario {
    fn file_name(&self) -> &'static str {
        super::RESOLVED_SCENARIO
    }
    fn export(&self, r: &RunResults, out: &mut dyn Write) -> Result<()> {
        out.write_all(r.resolved_scenario.as_bytes())?;
        Ok(())
    }
}

/// `summary.json`: every figure, versioned (`schema_version`).
pub struct SummaryJson;

impl Exporter<RunResults> for SummaryJson {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }
    fn export(&self, r: &RunResults, out: &mut dyn Write) -> Result<()> {
        serde_json::to_writer_pretty(&mut *out, &r.summary)?;
        out.write_all(b"\n")?;
        Ok(())
    }
}

/// `timeline.csv`: one row per second of the run.
pub struct TimelineCsv;

impl Exporter<RunResults> for TimelineCsv {
    fn file_name(&self) -> &'static str {
        "timeline.csv"
    }
    fn export(&self, r: &RunResults, out: &mut dyn Write) -> Result<()> {
        let mut w = csv::Writer::from_writer(out);
        for row in &r.timeline {
            w.serialize(row)?;
        }
        w.flush()?;
        Ok(())
    }
}

/// `db_stats.csv`: one row per database sample.
pub struct DbStatsCsv;

impl Exporter<RunResults> for DbStatsCsv {
    fn file_name(&self) -> &'static str {
        "db_stats.csv"
    }
    fn export(&self, r: &RunResults, out: &mut dyn Write) -> Result<()> {
        super::dbstats::write_csv(&r.db_stats, out)
    }
}

/// `latency.hlog`: HdrHistogram interval log, one tag per metric, one interval per second.
pub struct Hlog;

impl Exporter<RunResults> for Hlog {
    fn file_name(&self) -> &'static str {
        "latency.hlog"
    }
    fn export(&self, r: &RunResults, out: &mut dyn Write) -> Result<()> {
        out.write_all(&r.hlog)?;
        Ok(())
    }
}

fn latency_row(name: &str, s: &LatencySummary) -> String {
    if s.count == 0 {
        return format!("| {name} | 0 | – | – | – | – | – |\n");
    }
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} |\n",
        s.count,
        ms(s.p50),
        ms(s.p90),
        ms(s.p99),
        ms(s.p999),
        ms(s.max)
    )
}

/// report.md: The title, the incomplete-run warning, the verdict, accounting and thresholds.
fn md_head(s: &Summary) -> String {
    let mut md = String::new();
    md.push_str(&format!("# dbq-bench: {}\n\n", s.scenario.name));
    if let Some(why) = s.incomplete_because() {
        md.push_str(&format!(
            "> **Incomplete run** ({why}): the figures cover what happened before it stopped.\n\n"
        ));
    }
    md.push_str(&format!("**Verdict.** {}\n\n", s.verdict.text));
    if let Some(l) = &s.limit {
        md.push_str(&format!(
            "**What limited it: {}.** {}; {}.\n\n",
            l.kind.label(),
            capitalised(&l.evidence),
            l.action
        ));
    }
    md.push_str(&format!("**Accounting.** {}\n\n", s.accounting.verdict));
    if let Some(h) = &s.harness {
        md.push_str(&format!("**Load generator.** {}.\n\n", h.describe()));
    }
    if !s.thresholds.is_empty() {
        md.push_str("## Thresholds\n\n| metric | judged on | condition | actual | result |\n|---|---|---|---|---|\n");
        for t in &s.thresholds {
            md.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                t.metric,
                t.phase.as_deref().unwrap_or("the run"),
                t.condition,
                t.actual.map_or("n/a".into(), super::number),
                if t.passed { "passed" } else { "**FAILED**" }
            ));
        }
        md.push('\n');
    }
    if let Some(t) = &s.aborted_by_threshold {
        md.push_str(&format!("> Stopped early by --abort-on-fail: {t}\n\n"));
    }
    if !s.scenario.description.is_empty() {
        md.push_str(&format!("{}\n\n", s.scenario.description.trim()));
    }
    md
}

/// report.md: What ran where, and when.
fn md_run(s: &Summary) -> String {
    let mut md = String::new();
    md.push_str("## Run\n\n");
    md.push_str(&format!(
        "- scenario `{}` (seed {}), queue variant `{}`\n",
        s.scenario.file, s.scenario.seed, s.queue.variant
    ));
    md.push_str(&format!("- design: {}\n", s.design.label()));
    for w in &s.library_workers {
        md.push_str(&format!("- library: {}\n", w.line()));
    }
    md.push_str(&format!(
        "- database: {} — {}{}\n",
        s.database.provider,
        s.database.description,
        s.database.place_words()
    ));
    md.push_str(&format!("- server: {}\n", s.database.server_version));
    if !s.database.settings.is_empty() {
        let set: Vec<String> = s
            .database
            .settings
            .iter()
            .map(|(k, v)| format!("`{k}={v}`"))
            .collect();
        md.push_str(&format!("- settings: {}\n", set.join(", ")));
    }
    md.push_str(&format!(
        "- {} → {} (UTC); {}\n\n",
        s.run.started_at, s.run.ended_at, s.run.clock
    ));
    md
}

/// report.md: Throughput, job counts and latency over the measured phases.
fn md_figures(s: &Summary) -> String {
    let mut md = String::new();
    md.push_str("## Throughput (measured phases)\n\n");
    md.push_str(&format!(
        "| window | offered | enqueued | completed |\n|---|---|---|---|\n| {:.1} s | {} | {:.1} jobs/s | {:.1} jobs/s |\n\n",
        s.throughput.window_s,
        s.throughput.offered_per_s.map_or("max".into(), |r| format!("{r:.1} jobs/s")),
        s.throughput.enqueued_per_s,
        s.throughput.completed_per_s
    ));

    md.push_str("## Jobs\n\n| enqueued | prefilled | done | dead-lettered | failed attempts | lost | unfinished | duplicate completions | sent late | never sent | enqueue errors | worker errors | reaped |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let j = &s.jobs;
    md.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n\n",
        j.enqueued,
        j.prefilled,
        j.done,
        j.dead_lettered,
        j.failed_attempts,
        j.lost,
        j.unfinished,
        j.duplicate_completions,
        j.sent_late,
        j.dropped,
        j.enqueue_errors,
        j.worker_errors,
        j.reaped
    ));
    md.push_str(&format!("Producers: {}.\n\n", s.producers.describe()));
    if let Some(g) = &s.run.group_forming {
        md.push_str(&format!("Workers: {}.\n\n", g.sentence()));
    }
    if let Some(g) = &s.stalled_group {
        md.push_str(&format!("Workers' group: {}.\n\n", g.sentence()));
    }

    md.push_str("## Latency (ms, measured phases)\n\n| metric | count | p50 | p90 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|\n");
    for (name, l) in s.latency_ms.rows() {
        md.push_str(&latency_row(name, l));
    }
    md.push_str("\n`enqueue`, `schedule_lag`, `queue_wait` and `end_to_end` start at each job's intended enqueue time (open loop), so stalls show as latency, not as missing samples.\n\n");
    if let Some(b) = &s.bystander {
        md.push_str(&format!("{}\n\n", b.sentence()));
    }
    md.push_str(&format!("{}\n\n", s.cost.line(s.database.engine)));
    md
}

/// report.md: One row per phase.
fn md_phases(s: &Summary) -> String {
    let mut md = String::new();
    md.push_str("## Phases\n\n| phase | measured | duration | offered | enqueued/s | completed/s | failed | e2e p50 | e2e p99 | e2e max | queue_wait p99 |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for p in &s.phases {
        let e = &p.latency_ms.end_to_end;
        md.push_str(&format!(
            "| {} | {} | {:.1} s | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |\n",
            p.name,
            if p.measured { "yes" } else { "no" },
            p.duration_s,
            p.offered.as_deref().unwrap_or("–"),
            p.throughput.enqueued_per_s,
            p.throughput.completed_per_s,
            p.jobs.failed,
            if e.count > 0 { ms(e.p50) } else { "–".into() },
            if e.count > 0 { ms(e.p99) } else { "–".into() },
            if e.count > 0 { ms(e.max) } else { "–".into() },
            if p.latency_ms.queue_wait.count > 0 {
                ms(p.latency_ms.queue_wait.p99)
            } else {
                "–".into()
            },
        ));
    }
    md.push('\n');
    md
}

/// report.md: The claim's cost, the database phase by phase, and the claim plan.
fn md_database(s: &Summary) -> String {
    let mut md = String::new();
    if !s.claim_probes.is_empty() {
        md.push_str("## The claim's cost\n\n| when | at s | shared buffers | execution ms | rows |\n|---|---|---|---|---|\n");
        for c in &s.claim_probes {
            md.push_str(&format!(
                "| {} | {:.1} | {} | {:.3} | {} |\n",
                c.label, c.at_s, c.buffers, c.probe.execution_ms, c.probe.rows
            ));
        }
        md.push_str(&format!("\n{}\n\n", super::html::claim_explanation(s)));
    }
    if let Some(r) = &s.table_reads {
        md.push_str(&format!(
            "## What the workers read

{}.

",
            r.line()
        ));
        if let Some((header, rows)) = r.table() {
            md.push_str(&super::page::markdown_table(&header, &rows));
            md.push('\n');
        }
    }
    if !s.db_stats.per_phase.is_empty() {
        let words = s.database.engine.words();
        md.push_str(&format!(
            "## The database, phase by phase\n\n| phase | commits | rollbacks | deadlocks | {} MB | {} | {} | size MB |\n|---|---|---|---|---|---|---|---|\n",
            words.wal, words.cleanup, words.dead_tuples
        ));
        for p in &s.db_stats.per_phase {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} | {} | {} → {} | {:.1} → {:.1} |\n",
                p.phase,
                p.commits,
                p.rollbacks,
                p.deadlocks,
                p.wal_bytes as f64 / 1_048_576.0,
                p.autovacuums,
                p.dead_tuples_start,
                p.dead_tuples_end,
                p.total_bytes_start as f64 / 1_048_576.0,
                p.total_bytes_end as f64 / 1_048_576.0
            ));
        }
        md.push('\n');
    }
    if let Some((header, rows)) = super::dbstats::server_table(&s.db_stats) {
        let engine = s.database.engine;
        md.push_str(&format!(
            "## {}'s own figures, phase by phase\n\n{}\n\n{}\n",
            engine.label(),
            engine.words().server_figures,
            super::page::markdown_table(&header, &rows)
        ));
    }
    md.push_str("## Claim plan\n\nBefore the first phase:\n\n```\n");
    md.push_str(&s.queue.claim_plan_start.join("\n"));
    md.push_str("\n```\n\nAfter the drain:\n\n```\n");
    md.push_str(&s.queue.claim_plan_end.join("\n"));
    md.push_str("\n```\n");
    md
}

/// report.md: Accounting problems and errors, when there are any.
fn md_problems(s: &Summary) -> String {
    let mut md = String::new();
    if !s.accounting.ok {
        md.push_str("\n## Accounting problems\n\n| job id | ledger | table |\n|---|---|---|\n");
        for p in s
            .accounting
            .lost
            .iter()
            .chain(&s.accounting.disagreements)
            .chain(&s.accounting.duplicates)
        {
            md.push_str(&format!("| {} | {} | {} |\n", p.id, p.ledger, p.table));
        }
    }
    if !s.errors.is_empty() {
        md.push_str("\n## Errors\n\n| error | count |\n|---|---|\n");
        for (e, n) in &s.errors {
            md.push_str(&format!("| {} | {n} |\n", e.replace('|', "\\|")));
        }
    }
    md
}

/// report.md: what limited each phase, and the figures it was read from.
fn md_limits(s: &Summary) -> String {
    let Some((header, rows)) = super::limit::table(s) else {
        return String::new();
    };
    format!(
        "## What limited it\n\n{}\n",
        super::page::markdown_table(&header, &rows)
    )
}

/// `report.md`: the summary for people.
pub fn markdown(s: &Summary) -> String {
    [
        md_head(s),
        md_run(s),
        md_figures(s),
        md_phases(s),
        md_limits(s),
        md_database(s),
        md_problems(s),
    ]
    .concat()
}
