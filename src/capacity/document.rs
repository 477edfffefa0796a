//! A capacity search as a document: the answer, the steps as one table (the same cells in
//! Markdown and HTML), and the curves of latency and completions against offered load.

use super::{Capacity, Step};
use crate::report::artifact::Document;
use crate::report::page::{self, Callout, Page, Section, Tone};
use crate::report::svg::{Series, TimeChart};

impl Capacity {
    /// The steps, one row each.
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "step",
            "consumers",
            "offered/s",
            "completed/s",
            "e2e p50 ms",
            "e2e p99 ms",
            "backlog slope/s",
            "late %",
            "objective",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    (i + 1).to_string(),
                    s.consumers.to_string(),
                    format!("{:.0}", s.offered_per_s),
                    format!("{:.0}", s.completed_per_s),
                    format!("{:.1}", s.e2e_p50_ms),
                    format!("{:.1}", s.e2e_p99_ms),
                    format!("{:.0}", s.backlog_slope_per_s),
                    format!("{:.1}", s.sent_late_pct),
                    if s.passed {
                        "met".to_string()
                    } else {
                        format!("broken: {}", s.why.join("; "))
                    },
                ]
            })
            .collect();
        (header, rows)
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
            notes.push("Interrupted (Ctrl-C): the answer is from the steps that finished.".into());
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
        let mut by_rate = self.steps.clone();
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

impl Document for Capacity {
    /// The answer, then the steps as a table.
    fn markdown(&self) -> String {
        let (header, rows) = self.table();
        let mut md = format!(
            "# dbq-bench capacity: {}\n\n{}\n\n",
            self.name(),
            self.summary
        );
        md.push_str(&page::markdown_table(&header, &rows));
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
        let mut sections = vec![
            Section::new("Curves", self.charts()),
            Section::new("Steps", page::table(&header, &rows)),
        ];
        let notes = self.notes();
        if !notes.is_empty() {
            sections.push(Section::new("Notes", page::notes(&notes)));
        }
        Page {
            title: format!("dbq-bench capacity: {}", self.name()),
            subtitle: format!("{} · {} step(s)", self.scenario, self.steps.len()),
            intro: None,
            callouts: vec![Callout {
                tone: if self.load_generator_limited {
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
