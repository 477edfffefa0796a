//! A capacity search as a document: the answer, the steps as one table (the same cells in
//! Markdown and HTML), and the curves of latency and completions against offered load.

use super::{Capacity, Step};
use crate::report::artifact::Document;
use crate::report::page::{self, Callout, Page, Section, Tone};
use crate::report::svg::{Series, TimeChart};

/// A table's header and rows, the same cells in Markdown and HTML.
type Table = (Vec<String>, Vec<Vec<String>>);

/// Steps (or a confirmation's windows), one row each, with what the database did.
fn steps_table(steps: &[Step], first: &str) -> Table {
    let header = [
        first,
        "consumers",
        "offered/s",
        "completed/s",
        "e2e p50 ms",
        "e2e p99 ms",
        "backlog slope/s",
        "late %",
        "claim p50 ms",
        "autovacuums",
        "dead tuples (max)",
        "bystander p99 ms",
        "WAL bytes/job",
        "objective",
        "limit",
    ]
    .map(String::from)
    .to_vec();
    let rows = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vec![
                (i + 1).to_string(),
                s.consumers.to_string(),
                format!("{:.0}", s.offered_per_s),
                format!("{:.0}", s.completed_per_s),
                s.e2e_ms(s.e2e_p50_ms),
                s.e2e_ms(s.e2e_p99_ms),
                format!("{:.0}", s.backlog_slope_per_s),
                format!("{:.1}", s.sent_late_pct),
                format!("{:.2}", s.upkeep.claim_p50_ms),
                s.upkeep.autovacuums.to_string(),
                s.upkeep.dead_tuples_max.to_string(),
                s.upkeep
                    .bystander_p99_ms
                    .map_or("–".into(), |v| format!("{v:.2}")),
                s.upkeep
                    .wal_bytes_per_job
                    .map_or("–".into(), |v| format!("{v:.0}")),
                match (s.passed, s.disturbed) {
                    (true, _) => "met".to_string(),
                    (false, true) => format!(
                        "broken while the load machine stalled (measured again): {}",
                        s.why.join("; ")
                    ),
                    (false, false) => format!("broken: {}", s.why.join("; ")),
                },
                s.limit
                    .as_ref()
                    .map_or("–".into(), |l| l.kind.label().to_string()),
            ]
        })
        .collect();
    (header, rows)
}

impl Capacity {
    /// The steps, one row each.
    fn table(&self) -> Table {
        steps_table(&self.steps, "step")
    }

    /// Each confirmation try: its heading and its windows as a table; with a held horizon,
    /// the windows while it was held and after its release as tables of their own.
    fn tries(&self) -> Vec<(String, Table)> {
        let Some(c) = &self.confirmation else {
            return Vec::new();
        };
        let mut tables = Vec::new();
        for (i, t) in c.tries.iter().enumerate() {
            let (kind, length) = match t.screen {
                true => ("Screen", c.screen_s),
                false => ("Confirmation", c.held_for_s),
            };
            let heading = format!(
                "{kind} {}: {:.0} jobs/s on a fresh queue for {length:.0} s ({}): {}",
                i + 1,
                t.rate,
                c.basis,
                match (t.held, t.disturbed) {
                    (true, _) => "held",
                    (false, true) => "disturbed by the load machine, measured again",
                    (false, false) => "did not hold",
                }
            );
            tables.push((heading, steps_table(&t.windows, "window")));
            if let Some(u) = &t.upset {
                let heading = format!(
                    "Confirmation {}, the upset (measured, not judged): {}",
                    i + 1,
                    u.sentence()
                );
                tables.push((heading, steps_table(&t.upset_windows, "upset window")));
            }
            if let Some(h) = &t.hold {
                let held = format!(
                    "Confirmation {}, xmin horizon held for {:.0} s",
                    i + 1,
                    h.held_s
                );
                tables.push((held, steps_table(&h.windows, "held window")));
                let after = format!(
                    "Confirmation {}, after the release (measured, not judged)",
                    i + 1
                );
                tables.push((after, steps_table(&h.recovery, "recovery window")));
            }
        }
        tables
    }

    /// What the table leaves out: the knee, and why the search ended early.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(k) = self.knee_per_s {
            notes.push(format!(
                "The knee (p99 more than twice the lowest step's): {k:.0} jobs/s."
            ));
        }
        if self.budget_spent {
            notes.push("The time budget ran out before the search reached its precision.".into());
        }
        if self.interrupted {
            notes.push("Interrupted (Ctrl-C): no capacity is stated. The steps shown are the ones that finished; the step under way when it was interrupted is not judged and not shown.".into());
        }
        if self.backlog_left {
            notes.push("A step's backlog did not drain in time, so the search stopped: later steps on the same queue would have measured it.".into());
        }
        notes
    }

    fn name(&self) -> String {
        self.design
            .as_ref()
            .map_or_else(|| self.variant.clone(), |d| d.label())
    }

    /// The two curves against offered load.
    fn charts(&self) -> String {
        let mut by_rate: Vec<Step> = self
            .steps
            .iter()
            .filter(|s| !s.disturbed)
            .cloned()
            .collect();
        by_rate.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
        let hi = by_rate.last().map_or(1.0, |s| s.offered_per_s);
        let series = |name: &str, f: fn(&Step) -> f64| Series {
            name: name.into(),
            points: by_rate
                .iter()
                .map(|s| (s.offered_per_s, f(s)))
                .filter(|p| p.1.is_finite())
                .collect(),
        };
        let chart = |title: &str, y_label: &str, series: Vec<Series>| {
            TimeChart {
                title,
                x_label: "offered jobs/s",
                y_label,
                series,
                bands: &[],
                markers: &[],
                x_range: (0.0, hi),
            }
            .render()
        };
        let latency = chart(
            "End-to-end latency against offered load",
            "ms",
            vec![
                series("p50", |s| s.e2e_p50_ms),
                series("p99", |s| s.e2e_p99_ms),
            ],
        );
        let rate = chart(
            "Completed against offered (jobs/s)",
            "jobs/s",
            vec![
                series("completed", |s| s.completed_per_s),
                series("offered", |s| s.offered_per_s),
            ],
        );
        latency + &rate + &page::note("Each point is one step: a warm-up, then a measured window.")
    }
}

impl Capacity {
    /// Jobs waiting around each whole try's upset, one line per try, against seconds from
    /// the upset's start; `None` without one.
    fn upset_chart(&self) -> Option<String> {
        let c = self.confirmation.as_ref()?;
        let series: Vec<Series> = c
            .tries
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let u = t.upset.as_ref()?;
                let outcome = if u.recovered { "recovered" } else { "tipped" };
                Some(Series {
                    name: format!("try {} at {:.0}/s: {outcome}", i + 1, t.rate),
                    points: u.backlog.iter().map(|(s, b)| (*s, *b as f64)).collect(),
                })
            })
            .collect();
        let lo = series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| p.0)
            .reduce(f64::min)?;
        let hi = series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| p.0)
            .reduce(f64::max)?;
        let chart = TimeChart {
            title: "Jobs waiting around the upset",
            x_label: "seconds from the upset's start",
            y_label: "jobs",
            series,
            bands: &[],
            markers: &[],
            x_range: (lo, hi.max(lo + 1.0)),
        }
        .render();
        Some(
            chart
                + &page::note(
                    "Each line is one whole try on a fresh queue: recovered when its backlog was back at its level before the upset within the recovery span.",
                ),
        )
    }
}

impl Document for Capacity {
    /// The answer, then the steps as a table.
    fn markdown(&self) -> String {
        let (header, rows) = self.table();
        let mut md = format!(
            "# dbq-bench capacity: {}\n\n{}\n\n",
            self.name(),
            self.summary
        );
        if !self.steps.is_empty() {
            md.push_str(&page::markdown_table(&header, &rows));
        }
        for (heading, (header, rows)) in self.tries() {
            md.push_str(&format!("\n## {heading}\n\n"));
            md.push_str(&page::markdown_table(&header, &rows));
        }
        for n in self.notes() {
            md.push_str(&format!("\n{n}\n"));
        }
        md
    }

    fn page(&self) -> Page {
        let (header, rows) = self.table();
        let found = match self.search.consumers_for_rate {
            Some(_) => self.min_consumers.is_some(),
            None => self.max_sustainable_per_s.is_some(),
        };
        let mut sections = Vec::new();
        if !self.steps.is_empty() {
            // A curve needs two rates.
            if self.steps.iter().filter(|s| !s.disturbed).count() >= 2 {
                sections.push(Section::new("Curves", self.charts()));
            }
            sections.push(Section::new("Steps", page::table(&header, &rows)));
        }
        for (heading, (header, rows)) in self.tries() {
            sections.push(Section::new(&heading, page::table(&header, &rows)));
        }
        if let Some(chart) = self.upset_chart() {
            sections.push(Section::new("The backlog around each upset", chart));
        }
        let notes = self.notes();
        if !notes.is_empty() {
            sections.push(Section::new("Notes", page::notes(&notes)));
        }
        Page {
            title: format!("dbq-bench capacity: {}", self.name()),
            subtitle: format!("{} · {} step(s)", self.scenario, self.steps.len()),
            intro: None,
            callouts: vec![Callout {
                // An unconfirmed rate is a capacity between vacuums only.
                tone: if self.load_generator_limited
                    || self.load_machine_limited
                    || (found && !self.confirmed && self.search.consumers_for_rate.is_none())
                {
                    Tone::Warn
                } else {
                    Tone::of(found)
                },
                label: "Answer.".into(),
                text: self.summary.clone(),
            }],
            sections,
        }
    }
}
