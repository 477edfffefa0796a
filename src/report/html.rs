//! `report.html`'s sections: thresholds, key figures, charts and tables, on the shell every
//! document shares (`page`).

use super::limit::LimitKind;
use super::page::{Callout, Page, Section, Tone, note, table};
use super::summary::Summary;
use super::svg::escape;
use super::verdict::VerdictState;
use super::{RunResults, capitalised, ms, number};
use std::fmt::Write;

mod charts;

use charts::charts;

fn mb(bytes: i64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_048_576.0)
}

/// The run's page: its verdict and proof under the header, then every section.
pub fn page(r: &RunResults) -> Page {
    let s = &r.summary;
    let mut callouts = Vec::new();
    if let Some(why) = s.incomplete_because() {
        callouts.push(Callout {
            tone: Tone::Warn,
            label: "Incomplete run".into(),
            text: format!("({why}): the figures cover what happened before it stopped."),
        });
    }
    callouts.push(Callout {
        tone: match s.verdict.state {
            VerdictState::KeptUp => Tone::Ok,
            VerdictState::LoadGeneratorLimited => Tone::Warn,
            VerdictState::DidNotKeepUp => Tone::Bad,
            VerdictState::Incomplete => Tone::Warn,
        },
        label: "Verdict.".into(),
        text: s.verdict.text.clone(),
    });
    if let Some(l) = &s.limit {
        callouts.push(Callout {
            tone: match l.kind {
                LimitKind::LoadMachine | LimitKind::OtherProcess => Tone::Warn,
                _ => Tone::Plain,
            },
            label: format!("What limited it: {}.", l.kind.label()),
            text: format!("{}; {}.", capitalised(&l.evidence), l.action),
        });
    }
    callouts.push(Callout {
        tone: Tone::of(s.accounting.ok),
        label: "Accounting.".into(),
        text: s.accounting.verdict.clone(),
    });
    if let Some(scanned) = s.table_reads.as_ref().and_then(|r| r.scanned.as_ref()) {
        callouts.push(Callout {
            tone: Tone::Bad,
            label: "The plan, not the queue.".into(),
            text: scanned.sentence.clone(),
        });
    }
    let mut sections: Vec<Section> = [thresholds(s), Some(key_figures(s))]
        .into_iter()
        .flatten()
        .collect();
    sections.extend(charts(r));
    sections.push(phases(s));
    sections.extend(limits(s));
    sections.extend(
        [
            claim_probes(s),
            table_reads(s),
            faults(s),
            database(s),
            server_figures(s),
        ]
        .into_iter()
        .flatten(),
    );
    sections.push(measurement(s));
    Page {
        title: format!("dbq-bench: {}", s.scenario.name),
        subtitle: format!(
            "{} · seed {} · {} · {}: {} · {} → {} (UTC)",
            s.scenario.file,
            s.scenario.seed,
            s.design.label(),
            s.database.provider,
            s.database.server_version.split(" on ").next().unwrap_or(""),
            s.run.started_at,
            s.run.ended_at
        ),
        intro: intro(s),
        callouts,
        sections,
    }
}

/// The scenario's description, then what a library's workers said at their hello.
fn intro(s: &Summary) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    if !s.scenario.description.is_empty() {
        lines.push(s.scenario.description.clone());
    }
    lines.extend(
        s.library_workers
            .iter()
            .map(|w| format!("Library: {}.", w.line())),
    );
    if let Some(place) = s.database.place_words().strip_prefix("; ") {
        lines.push(format!("Server: {place}."));
    }
    (!lines.is_empty()).then(|| lines.join(" "))
}

fn thresholds(s: &Summary) -> Option<Section> {
    if s.thresholds.is_empty() {
        return None;
    }
    let mut h = String::new();
    h.push_str("<table><tr><th class=\"l\">metric</th><th class=\"l\">judged on</th><th class=\"l\">condition</th><th>actual</th><th>result</th></tr>");
    for t in &s.thresholds {
        let _ = write!(
            h,
            "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            escape(&t.metric),
            escape(
                t.phase
                    .as_deref()
                    .map_or("the run (measured phases)", |p| p)
            ),
            escape(&t.condition),
            t.actual.map_or("n/a".into(), number),
            if t.passed { "pass" } else { "fail" },
            if t.passed { "passed" } else { "FAILED" }
        );
    }
    h.push_str("</table>");
    Some(Section::new("Thresholds", h))
}

/// A latency figure, or "–" when nothing was timed (never a zero).
fn timed(l: &crate::metrics::LatencySummary, v: f64) -> String {
    if l.count > 0 { ms(v) } else { "–".into() }
}

fn key_figures(s: &Summary) -> Section {
    let e = &s.latency_ms.end_to_end;
    let j = &s.jobs;
    let mut h = String::new();
    let _ = write!(
        h,
        "<table><tr><th>offered</th><th>enqueued/s</th><th>completed/s</th><th>e2e p50 ms</th><th>e2e p99 ms</th><th>e2e max ms</th>\
         <th>enqueued</th><th>done</th><th>dead-lettered</th><th>lost</th><th>unfinished</th><th>duplicate completions</th></tr>\
         <tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>\
         <p class=\"note\">Over the measured phases ({:.1} s). Throughput counts committed work only; latencies start at each job's intended enqueue time. Producers: {}.</p>",
        s.throughput
            .offered_per_s
            .map_or("max".into(), |r| format!("{r:.0}/s")),
        s.throughput.enqueued_per_s,
        s.throughput.completed_per_s,
        timed(e, e.p50),
        timed(e, e.p99),
        timed(e, e.max),
        j.enqueued,
        j.done,
        j.dead_lettered,
        j.lost,
        j.unfinished,
        j.duplicate_completions,
        s.throughput.window_s,
        escape(&s.producers.describe())
    );
    if let Some(g) = &s.run.group_forming {
        let _ = write!(
            h,
            "<p class=\"note\">Workers: {}.</p>",
            escape(&g.sentence())
        );
    }
    if let Some(g) = &s.stalled_group {
        let _ = write!(
            h,
            "<p class=\"note\">Workers' group: {}.</p>",
            escape(&g.sentence())
        );
    }
    Section::new("Key figures", h)
}

/// What limited each phase, as one table.
fn limits(s: &Summary) -> Option<Section> {
    let (header, rows) = super::limit::table(s)?;
    let note = note(
        "Workers busy: their claim, handler and outcome statements against their time in the window; \
         server and others: cores' worth of CPU (others: everything on the machine besides the harness and the server); \
         a stall: a second in which the harness's 10 ms timer woke at least 100 ms late; \
         server waits: the run's busy sessions by what they waited on, sampled (client: the server waiting for the harness).",
    );
    Some(Section::new(
        "What limited it",
        table(&header, &rows) + &note,
    ))
}

fn phases(s: &Summary) -> Section {
    let mut h = String::from(
        "<table><tr><th class=\"l\">phase</th><th>measured</th><th>duration s</th><th>offered</th><th>enqueued/s</th><th>completed/s</th><th>failed</th><th>e2e p50</th><th>e2e p99</th><th>e2e max</th><th>queue_wait p99</th><th>claim p99</th><th>kept up</th></tr>",
    );
    for p in &s.phases {
        let l = &p.latency_ms;
        let v = |x: &crate::metrics::LatencySummary,
                 f: fn(&crate::metrics::LatencySummary) -> f64| {
            if x.count > 0 { ms(f(x)) } else { "–".into() }
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.name),
            if p.measured { "yes" } else { "no" },
            p.duration_s,
            escape(p.offered.as_deref().unwrap_or("–")),
            p.throughput.enqueued_per_s,
            p.throughput.completed_per_s,
            p.jobs.failed,
            v(&l.end_to_end, |x| x.p50),
            v(&l.end_to_end, |x| x.p99),
            v(&l.end_to_end, |x| x.max),
            v(&l.queue_wait, |x| x.p99),
            v(&l.claim, |x| x.p99),
            kept_up_cell(p)
        );
    }
    h.push_str("</table><p class=\"note\">Latencies that start at a job's intended enqueue time belong to the phase that scheduled the job; counts belong to the phase in which they happened.</p>");
    Section::new("Phases", h)
}

fn claim_probes(s: &Summary) -> Option<Section> {
    if s.claim_probes.is_empty() {
        return None;
    }
    let mut h = String::from(
        "<table><tr><th class=\"l\">when</th><th>at s</th><th>shared buffers</th><th>read from disk</th><th>execution ms</th><th>rows</th><th class=\"l\">plan</th></tr>",
    );
    for c in &s.claim_probes {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            escape(&c.label),
            c.at_s,
            c.buffers,
            c.probe.buffers_read,
            c.probe.execution_ms,
            c.probe.rows,
            escape(&c.probe.plan.join(" → "))
        );
    }
    h.push_str("</table>");
    let _ = write!(h, "<p class=\"note\">{}</p>", escape(&claim_explanation(s)));
    Some(Section::new("The claim's cost", h))
}

fn table_reads(s: &Summary) -> Option<Section> {
    let r = s.table_reads.as_ref()?;
    let mut h = format!("<p>{}</p>", escape(&r.line()));
    if let Some((header, rows)) = r.table() {
        h.push_str(&super::page::table(&header, &rows));
    }
    Some(Section::new("What the workers read", h))
}

/// The node that finds the job: the scan under the claim's LockRows.
fn scan(plan: &[String]) -> &str {
    plan.iter()
        .find(|n| n.contains("Scan") && !n.starts_with("CTE"))
        .map_or("?", String::as_str)
}

/// Says how the claim's cost changed over the run (and why it usually grows), and when its
/// plan changed.
pub fn claim_explanation(s: &Summary) -> String {
    let mut text = cost_explanation(s);
    let changes: Vec<String> = s
        .claim_probes
        .windows(2)
        .filter(|w| scan(&w[0].probe.plan) != scan(&w[1].probe.plan))
        .map(|w| {
            format!(
                "from \"{}\" to \"{}\" between \"{}\" and \"{}\"",
                scan(&w[0].probe.plan),
                scan(&w[1].probe.plan),
                w[0].label,
                w[1].label
            )
        })
        .collect();
    if !changes.is_empty() {
        text.push_str(&format!(
            " The claim's plan changed {}: a claim planned while the table was nearly empty uses a sequential scan and a sort until ANALYZE (or autoanalyze) gives the planner real statistics; workers keep their prepared plan until then.",
            changes.join(", then ")
        ));
    }
    text
}

fn cost_explanation(s: &Summary) -> String {
    // Compare claims that found a job: on an empty queue the claim has nothing to walk past.
    let found: Vec<&super::summary::ClaimProbeSummary> =
        s.claim_probes.iter().filter(|c| c.probe.rows > 0).collect();
    let (Some(first), Some(last), Some(most)) = (
        found.first(),
        found.last(),
        found.iter().max_by_key(|c| c.buffers),
    ) else {
        return "No probe found a job ready to claim, so there is nothing to compare.".into();
    };
    let autovacuums: i64 = s.db_stats.per_phase.iter().map(|p| p.autovacuums).sum();
    let walked = match index_walked(&most.probe.plan) {
        Some(index) => format!("A claim walks {index} in order"),
        None => "A claim that walks an index in order (see its plan below)".to_string(),
    };
    format!(
        "Each probe runs the claim of {} once under EXPLAIN (ANALYZE, BUFFERS) inside a transaction that is rolled back. \
         When it found a job, it touched {} shared buffers at \"{}\", {} at \"{}\", and {} at most (\"{}\"). \
         {walked} and visits every entry it meets, including those of jobs already \
         claimed or finished whose row versions are dead but not yet removed by VACUUM, before it reaches a live pending job: \
         its cost grows with the dead tuples left since the last vacuum and drops when VACUUM clears them \
         (autovacuum ran {autovacuums} time(s) on the table during the run; see the dead tuples chart).",
        s.design.label(),
        first.buffers,
        first.label,
        last.buffers,
        last.label,
        most.buffers,
        most.label
    )
}

/// The index a claim's plan scans (`Index Scan using idx_job_queue_pending on job_queue`),
/// from the design's own plan rather than the seed's.
fn index_walked(plan: &[String]) -> Option<&str> {
    plan.iter()
        .find_map(|node| node.split(" using ").nth(1)?.split_whitespace().next())
}

fn faults(s: &Summary) -> Option<Section> {
    let f = &s.faults;
    if !f.any() {
        return None;
    }
    let mut h = format!("<p>{}.</p>", escape(&f.counts_line()));
    if f.orphaned_jobs.count > 0 {
        let _ = write!(h, "<p>{}.</p>", escape(&f.orphaned_jobs.line()));
    }
    if !f.events.is_empty() {
        h.push_str("<table><tr><th class=\"l\">fault</th><th class=\"l\">phase</th><th>from s</th><th>to s</th><th>hit</th><th>rate back after s</th><th>backlog back after s</th><th>claim p50 back after s</th><th class=\"l\">detail</th></tr>");
        let opt = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.1}"));
        for e in &f.events {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                escape(&e.kind),
                escape(&e.phase),
                e.at_s,
                e.until_s,
                e.count,
                opt(e.recovery.rate_recovered_after_s),
                opt(e.recovery.backlog_recovered_after_s),
                opt(e.recovery.claim_recovered_after_s),
                escape(&e.detail)
            );
        }
        h.push_str("</table><p class=\"note\">Recovery is read off the per-second timeline: the time from the end of the fault until completions reach 90% of their rate in the five seconds before it, until the backlog is back to its size then, and until the per-second claim p50 is back within 10% of its slowest second then. – means not before the run ended.</p>");
    }
    for p in &f.table_probes {
        let _ = write!(
            h,
            "<p class=\"note\">Queue table {}: {} dead / {} live tuples, {} with indexes.</p>",
            escape(&p.label),
            p.dead_tuples,
            p.live_tuples,
            mb(p.total_bytes)
        );
    }
    Some(Section::new("Faults", h))
}

fn database(s: &Summary) -> Option<Section> {
    if s.db_stats.per_phase.is_empty() {
        return None;
    }
    let words = s.database.engine.words();
    let mut h = String::new();
    let _ = write!(
        h,
        "<table><tr><th class=\"l\">phase</th><th>commits</th><th>rollbacks</th><th>deadlocks</th><th>{}</th><th>{}</th><th>{}</th><th>size</th><th>oldest snapshot (xids)</th></tr>",
        words.wal,
        escape(words.cleanup),
        escape(words.dead_tuples)
    );
    for p in &s.db_stats.per_phase {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{} → {}</td><td>{}</td></tr>",
            escape(&p.phase),
            p.commits,
            p.rollbacks,
            p.deadlocks,
            mb(p.wal_bytes),
            p.autovacuums,
            p.dead_tuples_start,
            p.dead_tuples_end,
            mb(p.total_bytes_start),
            mb(p.total_bytes_end),
            p.max_xmin_age_xids
        );
    }
    h.push_str("</table>");
    Some(Section::new("The database, phase by phase", h))
}

/// A broker's own figures, phase by phase, in its words.
fn server_figures(s: &Summary) -> Option<Section> {
    let (header, rows) = super::dbstats::server_table(&s.db_stats)?;
    let engine = s.database.engine;
    let mut h = note(engine.words().server_figures);
    h.push_str(&table(&header, &rows));
    Some(Section::new(
        format!("{}'s own figures, phase by phase", engine.label()),
        h,
    ))
}

fn measurement(s: &Summary) -> Section {
    let m = &s.meta;
    let settings: Vec<String> = m
        .server_settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut h = String::new();
    let _ = write!(
        h,
        "<p class=\"note\">{}. Database statistics were sampled {} time(s) on a connection of their own. \
         Percentiles come from HDR histograms (µs, 3 significant digits).</p><table>\
         <tr><th class=\"l\">scenario sha256</th><td class=\"l\"><code>{}</code></td></tr><tr><th class=\"l\">seed</th><td class=\"l\">{}</td></tr>\
         <tr><th class=\"l\">dbq-bench</th><td class=\"l\">{} ({})</td></tr><tr><th class=\"l\">server</th><td class=\"l\">{}</td></tr>\
         <tr><th class=\"l\">settings</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">machine</th><td class=\"l\">{} cores, {}</td></tr>\
         <tr><th class=\"l\">design</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">schema</th><td class=\"l\">{}</td></tr></table>",
        escape(&s.run.clock),
        s.db_stats.samples,
        m.scenario_sha256,
        m.seed,
        escape(&m.tool_version),
        escape(&m.git_commit),
        escape(&m.server_version),
        escape(&settings.join(", ")),
        m.cores,
        mb(m.memory_bytes as i64),
        escape(&s.design.label()),
        escape(&s.database.schema)
    );
    Section::new("How this was measured", h)
}

/// A phase's "kept up" cell, in the verdict's words: a phase failed only by its producers'
/// lateness was kept up with by the consumers.
fn kept_up_cell(p: &super::phases::PhaseSummary) -> &'static str {
    let j = &p.jobs;
    let gap = j.enqueued as i64 - (j.completed + j.dead_lettered) as i64;
    let consumers_kept_up = gap <= ((j.enqueued as f64 * 0.02) as i64).max(10);
    match p.kept_up {
        None => "–",
        Some(true) => "yes",
        Some(false) if consumers_kept_up => "consumers yes; producers sent late",
        Some(false) => "no",
    }
}

#[cfg(test)]
mod claim_wording {
    #[test]
    fn the_index_named_is_the_one_the_plan_scans() {
        let plan = [
            "Update on job_queue".to_string(),
            "Index Scan using idx_job_queue_status on job_queue".to_string(),
        ];
        assert_eq!(super::index_walked(&plan), Some("idx_job_queue_status"));
        assert_eq!(
            super::index_walked(&["Seq Scan on job_queue".to_string()]),
            None
        );
    }
}
