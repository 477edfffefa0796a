//! The `cost` section of summary.json: what each job cost the database over the measured
//! phases, from the sampler's first and last samples of each phase.

use super::dbstats::DbStatsSummary;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JobCost {
    /// Write-ahead log (PostgreSQL) or redo log (MariaDB) written per completed job, bytes.
    /// The log is the server's: whatever else it ran meanwhile (a bystander, other tests)
    /// counts too.
    pub wal_bytes_per_job: Option<f64>,
    /// Growth of the queue table with its indexes per 1,000 jobs completed, bytes.
    pub bytes_per_1k_jobs: Option<f64>,
    /// Autovacuum (or purge) runs and manual VACUUMs of the queue table.
    pub autovacuums: i64,
    pub vacuums: i64,
}

impl JobCost {
    /// Over `phases` (the measured ones, or one window): each one's name and the jobs that
    /// finished in it.
    pub fn of(db: &DbStatsSummary, phases: &[(&str, u64)]) -> JobCost {
        let stats: Vec<_> = phases
            .iter()
            .filter_map(|(name, _)| db.per_phase.iter().find(|d| d.phase == *name))
            .collect();
        let jobs: u64 = phases.iter().map(|(_, finished)| finished).sum();
        let per = |total: i64, scale: f64| {
            (jobs > 0 && total > 0).then(|| (total as f64 * scale / jobs as f64).round())
        };
        let grown = match (stats.first(), stats.last()) {
            (Some(a), Some(b)) => b.total_bytes_end - a.total_bytes_start,
            _ => 0,
        };
        JobCost {
            wal_bytes_per_job: per(stats.iter().map(|d| d.wal_bytes).sum(), 1.0),
            bytes_per_1k_jobs: per(grown, 1000.0),
            autovacuums: stats.iter().map(|d| d.autovacuums).sum(),
            vacuums: stats.iter().map(|d| d.vacuums).sum(),
        }
    }

    /// One line for the terminal and the reports, in the engine's words.
    pub fn line(&self, engine: crate::backend::Engine) -> String {
        let or_dash = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
        let words = engine.words();
        let vacuums = match words.manual_cleanup {
            Some(what) => format!(", {} {what}", self.vacuums),
            None => String::new(),
        };
        format!(
            "Cost per job: {} {} bytes per completed job, {} bytes of {} growth per 1,000 jobs, {} {}{vacuums}.",
            or_dash(self.wal_bytes_per_job),
            words.wal,
            or_dash(self.bytes_per_1k_jobs),
            words.size,
            self.autovacuums,
            words.cleanup,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::dbstats::PhaseDbStats;

    #[test]
    fn costs_are_per_finished_job_over_the_phases_named() {
        let phase = |name: &str, wal, from, to, autovacuums| PhaseDbStats {
            phase: name.into(),
            wal_bytes: wal,
            total_bytes_start: from,
            total_bytes_end: to,
            autovacuums,
            ..PhaseDbStats::default()
        };
        let db = DbStatsSummary {
            per_phase: vec![
                phase("warmup", 1_000_000, 0, 8192, 0),
                phase("a", 400_000, 8192, 16384, 1),
                phase("b", 600_000, 16384, 24576, 2),
            ],
            ..DbStatsSummary::default()
        };
        let c = JobCost::of(&db, &[("a", 500), ("b", 500)]);
        assert_eq!(c.wal_bytes_per_job, Some(1000.0));
        // 16 KiB grown over 1,000 jobs.
        assert_eq!(c.bytes_per_1k_jobs, Some(16384.0));
        assert_eq!((c.autovacuums, c.vacuums), (3, 0));
        // No finished jobs: nothing per job.
        assert_eq!(JobCost::of(&db, &[("a", 0)]).wal_bytes_per_job, None);
        assert!(
            c.line(crate::backend::Engine::Postgres)
                .starts_with("Cost per job: 1000 WAL bytes per completed job")
        );
    }
}
