//! Reports: the run's results as files, one exporter per format behind one trait, plus the
//! terminal summary. Exporters only read [`RunResults`]; they never touch the database.

pub mod exporters;
pub mod faults;
pub mod summary;
pub mod terminal;

pub use summary::{RunFacts, Summary};

use crate::metrics::TimelineRow;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Everything a run leaves behind.
#[derive(Debug, Clone)]
pub struct RunResults {
    pub summary: Summary,
    pub timeline: Vec<TimelineRow>,
    /// HdrHistogram interval log text.
    pub hlog: Vec<u8>,
    /// The scenario with every default filled in (TOML).
    pub resolved_scenario: String,
}

/// Writes one output format.
pub trait Exporter {
    /// File name inside the results directory.
    fn file_name(&self) -> &'static str;
    fn export(&self, results: &RunResults, out: &mut dyn Write) -> Result<()>;
}

/// Every exporter, in the order files are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(exporters::ResolvedScenario),
        Box::new(exporters::Json),
        Box::new(exporters::TimelineCsv),
        Box::new(exporters::Hlog),
        Box::new(exporters::Markdown),
    ]
}

/// Writes every format into `dir` (created if needed); returns the files written.
pub fn write_all(dir: &Path, results: &RunResults) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for e in exporters() {
        let path = dir.join(e.file_name());
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        e.export(results, &mut out)
            .with_context(|| format!("writing {}", path.display()))?;
        out.flush()
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
