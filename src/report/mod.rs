//! Reports: the run's results as files, one exporter per format behind one trait
//! (`artifact`), the one HTML shell every document shares (`page`), plus the terminal
//! summary. Exporters only read [`RunResults`]; they never touch the database, so
//! `dbq-bench report DIR` can render every format again from the saved files.

pub mod article;
pub mod artifact;
pub mod bystander;
pub mod cost;
pub mod dbstats;
pub mod design;
pub mod exporters;
pub mod faults;
pub mod headline;
pub mod html;
pub mod limit;
pub mod orphans;
pub mod page;
pub mod phases;
pub mod reads;
pub mod setup;
pub mod stall;
pub mod summary;
pub mod svg;
pub mod terminal;
pub mod thresholds;
pub mod verdict;

pub use setup::{BystanderSetup, DesignOptions, RunSetup};
pub use summary::{GroupForming, RunFacts, Summary};

use crate::metrics::TimelineRow;
use anyhow::{Context, Result};
use artifact::{Document, Exporter};
use dbstats::DbStatsRow;
use std::path::{Path, PathBuf};

/// The scenario as run, every default filled in (written first, so that `prove` finds it).
pub const RESOLVED_SCENARIO: &str = "scenario.resolved.toml";

/// Everything a run leaves behind.
#[derive(Debug, Clone)]
pub struct RunResults {
    pub summary: Summary,
    pub timeline: Vec<TimelineRow>,
    /// Database statistics, one row per sample.
    pub db_stats: Vec<DbStatsRow>,
    /// HdrHistogram interval log text.
    pub hlog: Vec<u8>,
    /// The scenario with every default filled in (TOML).
    pub resolved_scenario: String,
}

/// A latency in ms as tables show it: three significant figures or so.
pub fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `text` with its first letter in upper case (headings, sentences).
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A figure as tables show it: whole numbers without decimals.
pub fn number(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// Every file of a run's results, in the order they are written.
pub fn exporters() -> [&'static dyn Exporter<RunResults>; 7] {
    [
        &exporters::ResolvedScenario,
        &exporters::SummaryJson,
        &exporters::TimelineCsv,
        &exporters::DbStatsCsv,
        &exporters::Hlog,
        &artifact::Markdown("report.md"),
        &artifact::Html("report.html"),
    ]
}

/// Writes every format into `dir` (created if needed); returns the files written.
pub fn write_all(dir: &Path, results: &RunResults) -> Result<Vec<PathBuf>> {
    artifact::write(dir, results, &exporters())
}

impl Document for RunResults {
    fn markdown(&self) -> String {
        exporters::markdown(&self.summary)
    }

    fn page(&self) -> page::Page {
        html::page(self)
    }
}

impl RunResults {
    /// Reads a results directory written by [`write_all`].
    pub fn load(dir: &Path) -> Result<RunResults> {
        let path = |name: &str| dir.join(name);
        let read = |name: &str| {
            std::fs::read(path(name)).with_context(|| format!("reading {}", path(name).display()))
        };
        let mut summary: Summary = serde_json::from_slice(&read("summary.json")?)
            .with_context(|| format!("parsing {}", path("summary.json").display()))?;
        let readable = summary::OLDEST_SCHEMA_VERSION..=summary::SCHEMA_VERSION;
        if !readable.contains(&summary.schema_version) {
            anyhow::bail!(
                "{} has schema_version {}; this dbq-bench reads {} to {}",
                path("summary.json").display(),
                summary.schema_version,
                readable.start(),
                readable.end()
            );
        }
        // An older schema's fields were read under their new names: the summary is now the
        // current schema's, and is written as such.
        summary.schema_version = summary::SCHEMA_VERSION;
        let timeline = csv::Reader::from_reader(read("timeline.csv")?.as_slice())
            .deserialize()
            .collect::<Result<Vec<TimelineRow>, _>>()
            .with_context(|| format!("parsing {}", path("timeline.csv").display()))?;
        Ok(RunResults {
            summary,
            timeline,
            db_stats: dbstats::read_csv(read("db_stats.csv")?.as_slice())?,
            hlog: read("latency.hlog")?,
            resolved_scenario: String::from_utf8_lossy(&read(RESOLVED_SCENARIO)?).into_owned(),
        })
    }
}
