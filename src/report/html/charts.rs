//! `report.html`'s charts: over time (the phases as bands, the faults as markers, one x
//! range for the load and the drain: rates, depth, latency, the table's growth), the latency
//! spectrum and the wait events.

use super::super::page::{Section, note};
use super::super::summary::Summary;
use super::super::svg::{Band, Marker, Series, SpectrumChart, TimeChart, bars};
use super::super::{RunResults, capitalised};
use crate::metrics::WindowKind;

/// What every time chart of a run shares: its phases as bands, its faults as markers, and
/// one x range (the load and the drain).
struct TimeAxis<'a> {
    r: &'a RunResults,
    bands: Vec<Band>,
    markers: Vec<Marker>,
    end: f64,
}

impl<'a> TimeAxis<'a> {
    fn of(r: &'a RunResults) -> Self {
        let s = &r.summary;
        let bands = s
            .phases
            .iter()
            .filter(|p| p.kind != WindowKind::Prefill)
            .map(|p| Band {
                from: p.start_s,
                to: p.start_s + p.duration_s,
                label: p.name.clone(),
            })
            .collect();
        let markers = s
            .faults
            .events
            .iter()
            .map(|e| Marker {
                at: e.at_s,
                label: e.kind.clone(),
            })
            .collect();
        let end = s
            .phases
            .iter()
            .map(|p| p.start_s + p.duration_s)
            .fold(1.0, f64::max);
        TimeAxis {
            r,
            bands,
            markers,
            end,
        }
    }

    /// A series from the per-second time line.
    fn line(&self, name: &str, f: &dyn Fn(&crate::metrics::TimelineRow) -> Option<f64>) -> Series {
        Series {
            name: name.into(),
            points: self
                .r
                .timeline
                .iter()
                .filter_map(|row| Some((row.second as f64 + 0.5, f(row)?)))
                .collect(),
        }
    }

    /// A series from the database samples.
    fn db(&self, name: &str, f: &dyn Fn(&crate::backend::DbSample) -> Option<f64>) -> Series {
        Series {
            name: name.into(),
            points: self
                .r
                .db_stats
                .iter()
                .filter_map(|row| f(&row.sample).map(|v| (row.t_s, v)))
                .collect(),
        }
    }

    /// The log written per second between consecutive samples, KB/s.
    fn wal_rate(&self) -> Series {
        let rows = &self.r.db_stats;
        Series {
            name: "WAL / redo log".into(),
            points: rows
                .windows(2)
                .filter(|w| w[1].t_s > w[0].t_s)
                .map(|w| {
                    let bytes = (w[1].sample.wal_bytes - w[0].sample.wal_bytes).max(0) as f64;
                    (w[1].t_s, bytes / 1024.0 / (w[1].t_s - w[0].t_s))
                })
                .collect(),
        }
    }

    fn chart(&self, title: &str, y: &str, series: Vec<Series>) -> String {
        TimeChart {
            title,
            x_label: "seconds since the load started",
            y_label: y,
            series,
            bands: &self.bands,
            markers: &self.markers,
            x_range: (0.0, self.end),
        }
        .render()
    }
}

/// The time charts, each a section.
pub(super) fn charts(r: &RunResults) -> Vec<Section> {
    let t = TimeAxis::of(r);
    let throughput = t.chart(
        "Jobs enqueued and completed per second",
        "jobs per second",
        vec![
            t.line("enqueued", &|r| Some(r.enqueued as f64)),
            t.line("completed", &|r| Some(r.completed as f64)),
            t.line("failed", &|r| Some(r.failed as f64)),
        ],
    );
    let depth = t.chart(
        "Jobs waiting (pending) and being worked on (processing, as committed)",
        "jobs",
        vec![
            t.db("pending", &|d| Some(d.pending as f64)),
            t.db("processing (full samples)", &|d| {
                d.processing.map(|p| p as f64)
            }),
        ],
    );
    let latency = t.chart(
        "End-to-end latency of the jobs completed in each second",
        "ms",
        vec![
            t.line("p50", &|r| r.e2e_p50_ms),
            t.line("p99", &|r| r.e2e_p99_ms),
            t.line("max", &|r| r.e2e_max_ms),
        ],
    );
    let mut sections = vec![
        Section::new("Throughput", throughput),
        Section::new("Queue depth", depth),
        Section::new("End-to-end latency over time", latency),
    ];
    if let Some(b) = &r.summary.bystander {
        let chart = t.chart(
            "Bystander p99: statements on an unrelated table answered in each second",
            "ms",
            vec![
                t.line("bystander p99", &|r| r.bystander_p99_ms),
                t.line("claim p50", &|r| r.claim_p50_ms),
            ],
        );
        sections.push(Section::new(
            "The queue's cost to a bystander",
            chart + &note(&b.sentence()),
        ));
    }
    sections.extend([
        spectrum(&r.summary),
        table_growth(&t, &r.summary),
        wait_events(&r.summary),
    ]);
    sections
}

/// Dead row versions (or undo history) and the table's size over time.
fn table_growth(t: &TimeAxis, s: &Summary) -> Section {
    let words = s.database.engine.words();
    let tuples = t.chart(
        "Row versions in the queue table",
        "tuples",
        vec![
            t.db(words.dead_tuples, &|d| d.versions.map(|v| v.dead as f64)),
            t.db("live tuples", &|d| Some(d.held as f64)),
        ],
    );
    let size = t.chart(
        "Size of the queue table",
        "MB",
        vec![
            t.db("table + indexes", &|d| {
                Some(d.total_bytes as f64 / 1_048_576.0)
            }),
            t.db("table", &|d| Some(d.table_bytes as f64 / 1_048_576.0)),
        ],
    );
    let wal = t.chart(
        "Log written per second (the server's, from one sample to the next)",
        "KB/s",
        vec![t.wal_rate()],
    );
    Section::new(
        format!("{}, table size and log", capitalised(words.dead_tuples)),
        tuples + &size + &wal,
    )
}

fn spectrum(s: &Summary) -> Section {
    let spectrum: Vec<Series> = ["end_to_end", "queue_wait", "enqueue", "claim", "handler"]
        .iter()
        .filter_map(|m| {
            Some(Series {
                name: m.to_string(),
                points: s.latency_spectrum_ms.get(*m)?.clone(),
            })
        })
        .collect();
    let chart = SpectrumChart {
        title: "Latency by percentile, measured phases (log scales)",
        series: spectrum,
    }
    .render();
    Section::new("Latency percentile spectrum", chart)
}

fn wait_events(s: &Summary) -> Section {
    let mut waits: Vec<(String, f64)> = s
        .db_stats
        .wait_events
        .iter()
        .map(|(k, v)| (k.clone(), *v as f64))
        .collect();
    waits.sort_by(|a, b| b.1.total_cmp(&a.1));
    waits.truncate(12);
    let mut h = bars(
        "What the run's busy sessions were waiting on (sessions × samples)",
        &waits,
    );
    h.push_str(
        "<p class=\"note\"><code>Client:ClientRead</code> on a worker session is time the server waited for the worker, \
         e.g. a seed worker's handler running inside its open transaction; <code>Lock:*</code> is waiting for another session's lock; \
         <code>IO:*</code> and <code>LWLock:*</code> are the server's own contention.</p>",
    );
    Section::new("Wait events", h)
}
