//! The fresh-table check as a document: each rate's row from its two sides, the table and
//! its verdict, and the page `calibrate` writes.

use super::*;

impl FreshRow {
    pub(super) fn of(rate: f64, repeat: u32, pgbench: Side, harness: Side) -> FreshRow {
        let ratio = harness.completed_per_s / pgbench.completed_per_s.max(1e-9);
        let close = (ratio - 1.0).abs() <= RATE_NOISE;
        let agree = close && harness.kept_up == pgbench.kept_up;
        let figures = format!(
            "{:.0} against pgbench's {:.0} completed/s ({ratio:.2}×), at most {} against {} jobs waiting",
            harness.completed_per_s,
            pgbench.completed_per_s,
            harness.most_waiting,
            pgbench.most_waiting
        );
        let kept = |k: bool| if k { "kept up" } else { "fell behind" };
        let finding = if agree {
            format!(
                "{rate:.0} jobs/s: the harness and pgbench agree, both {} ({figures}).",
                kept(harness.kept_up)
            )
        } else if ratio < 1.0 || (pgbench.kept_up && !harness.kept_up) {
            format!(
                "{rate:.0} jobs/s: the harness {} where pgbench {} ({figures}): a difference beyond noise, and the harness's.",
                kept(harness.kept_up),
                kept(pgbench.kept_up)
            )
        } else {
            format!(
                "{rate:.0} jobs/s: pgbench {} where the harness {} ({figures}): the independent load did worse; see its samples.",
                kept(pgbench.kept_up),
                kept(harness.kept_up)
            )
        };
        FreshRow {
            rate,
            repeat,
            pgbench,
            harness,
            agree,
            finding,
        }
    }
}

impl FreshCheck {
    /// One row per tool, rate and repeat (the same cells in Markdown and HTML).
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "offered jobs/s",
            "run",
            "tool",
            "completed jobs/s",
            "most jobs waiting",
            "dead tuples (max)",
            "claim ms (mean)",
            "sequential scans per claim",
            "kept up",
        ]
        .map(String::from)
        .to_vec();
        let mut rows = Vec::new();
        for r in &self.rows {
            for (tool, s) in [("pgbench", &r.pgbench), ("dbq-bench", &r.harness)] {
                rows.push(vec![
                    format!("{:.0}", r.rate),
                    r.repeat.to_string(),
                    tool.to_string(),
                    format!("{:.1}", s.completed_per_s),
                    s.most_waiting.to_string(),
                    s.dead_tuples_max.to_string(),
                    format!("{:.3}", s.claim_mean_ms),
                    format!("{:.3}", s.seq_scans_per_claim),
                    if s.kept_up { "yes" } else { "no" }.into(),
                ]);
            }
        }
        (header, rows)
    }

    fn method(&self) -> String {
        format!(
            "The seed's statements on a fresh queue table, {:.0} s per tool and rate ({} server), {} time(s) in turn, pgbench first: {} producer connection(s) inserting at the offered rate with Poisson arrivals (pgbench -R), {} consumer(s) claiming in a transaction, a {:.1} ms handler (pgbench: \\sleep) and a {:.0} ms sleep after an empty claim; {}; the empty table analyzed 1 s in and again each time it doubled. Both sampled once a second by the harness's sampler. Claim ms: pgbench's mean over every claim (found or empty), the harness's over the claims that found a job. Kept up: the verdict's rule on the jobs waiting each second.",
            self.duration_s,
            self.server,
            self.repeats,
            self.producers,
            self.consumers,
            self.handler_ms,
            self.poll_ms,
            match self.first_vacuum_after_s {
                Some(s) => format!(
                    "autovacuum kept off the table for its first {s:.0} s, then one VACUUM (ANALYZE) paced as autovacuum's"
                ),
                None => "autovacuum left to come whenever it came".into(),
            }
        )
    }

    /// Every row's finding; `agree` when all agree.
    pub fn conclusion(&self) -> String {
        let all = self.rows.iter().all(|r| r.agree);
        let findings: Vec<&str> = self.rows.iter().map(|r| r.finding.as_str()).collect();
        match all {
            true => format!("Agreed at every rate: {}", findings.join(" ")),
            false => format!("Not at every rate: {}", findings.join(" ")),
        }
    }
}

impl Document for FreshCheck {
    fn markdown(&self) -> String {
        let (header, rows) = self.table();
        format!(
            "# dbq-bench calibrate --fresh-table\n\n{}\n\n{}\n{}\n",
            self.method(),
            page::markdown_table(&header, &rows),
            self.conclusion()
        )
    }

    fn page(&self) -> Page {
        let (header, rows) = self.table();
        Page {
            title: "dbq-bench calibrate --fresh-table".into(),
            subtitle: format!("{} server, {:.0} s per run", self.server, self.duration_s),
            intro: Some(self.method()),
            callouts: vec![Callout {
                tone: Tone::of(self.rows.iter().all(|r| r.agree)),
                label: "Against pgbench.".into(),
                text: self.conclusion(),
            }],
            sections: vec![Section::new(
                "pgbench and dbq-bench on a fresh table",
                page::table(&header, &rows),
            )],
        }
    }
}
