//! The `cost` section of summary.json: what each job cost the database over the measured
//! phases, from the sampler's first and last samples of each phase.

use super::dbstats::{DbStatsSummary, PhaseDbStats};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JobCost {
    /// Write-ahead log (PostgreSQL) or redo log (MariaDB) written per completed job, bytes.
    /// The log is the server's: whatever else it ran meanwhile (a bystander, other tests)
    /// counts too.
    pub wal_bytes_per_job: Option<f64>,
    /// Growth of the queue table with its indexes per 1,000 jobs completed, bytes; none
    /// where the engine's size does not grow with jobs (a broker's memory).
    pub bytes_per_1k_jobs: Option<f64>,
    /// Growth of the engine's size figure over the measured phases, bytes: a table's, or a
    /// broker's memory (its warm-up included, so never divided by the jobs).
    #[serde(default)]
    pub size_growth_bytes: Option<i64>,
    /// Autovacuum (or purge) runs and manual VACUUMs of the queue table.
    pub autovacuums: i64,
    pub vacuums: i64,
    /// The run is incomplete (its jobs did not all finish): nothing is given per job, only
    /// what the measured phases cost whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_job_withheld: bool,
}

impl JobCost {
    /// Over `phases` (the measured ones, or one window): each one's name and the jobs that
    /// finished in it, on `engine` (whose words say whether its size grows with jobs).
    pub fn of(
        db: &DbStatsSummary,
        phases: &[(&str, u64)],
        engine: crate::backend::Engine,
    ) -> JobCost {
        let stats = phase_stats(db, phases);
        let jobs = finished_jobs(phases);
        let grown = match (stats.first(), stats.last()) {
            (Some(a), Some(b)) => Some(b.total_bytes_end - a.total_bytes_start),
            _ => None,
        };
        JobCost {
            wal_bytes_per_job: wal_bytes_per_job(db, phases),
            bytes_per_1k_jobs: per_jobs(grown.unwrap_or(0), 1000.0, jobs)
                .filter(|_| engine.words().size_per_job),
            size_growth_bytes: grown,
            autovacuums: stats.iter().map(|d| d.autovacuums).sum(),
            vacuums: stats.iter().map(|d| d.vacuums).sum(),
            per_job_withheld: false,
        }
    }

    /// An incomplete run's cost: its jobs did not all finish, so a figure per finished job
    /// would charge them the unfinished ones' writes; the phases' whole growth stays.
    pub fn withhold_per_job(&mut self) {
        self.wal_bytes_per_job = None;
        self.bytes_per_1k_jobs = None;
        self.per_job_withheld = true;
    }

    /// One line for the terminal and the reports, in the engine's words.
    pub fn line(&self, engine: crate::backend::Engine) -> String {
        let or_dash = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
        let words = engine.words();
        let vacuums = match words.manual_cleanup {
            Some(what) => format!(", {} {what}", self.vacuums),
            None => String::new(),
        };
        if self.per_job_withheld {
            return format!(
                "Cost per job: not given, the run is incomplete (its jobs did not all finish); over the measured phases {} bytes of {} growth, {} {}{vacuums}.",
                or_dash(self.size_growth_bytes.map(|b| b as f64)),
                words.size,
                self.autovacuums,
                words.cleanup,
            );
        }
        let growth = match words.size_per_job {
            true => format!(
                "{} bytes of {} growth per 1,000 jobs",
                or_dash(self.bytes_per_1k_jobs),
                words.size
            ),
            false => format!(
                "{} bytes of {} growth over the measured phases (its warm-up included: not a cost per job)",
                or_dash(self.size_growth_bytes.map(|b| b as f64)),
                words.size
            ),
        };
        format!(
            "Cost per job: {} {} bytes per completed job, {growth}, {} {}{vacuums}.",
            or_dash(self.wal_bytes_per_job),
            words.wal,
            self.autovacuums,
            words.cleanup,
        )
    }
}

/// The log written per finished job over `phases` (each one's name and the jobs that
/// finished in it); none when nothing finished or nothing was written.
pub fn wal_bytes_per_job(db: &DbStatsSummary, phases: &[(&str, u64)]) -> Option<f64> {
    let written = phase_stats(db, phases).iter().map(|d| d.wal_bytes).sum();
    per_jobs(written, 1.0, finished_jobs(phases))
}

/// The sampler's figures of each of `phases` that has them.
fn phase_stats<'a>(db: &'a DbStatsSummary, phases: &[(&str, u64)]) -> Vec<&'a PhaseDbStats> {
    phases
        .iter()
        .filter_map(|(name, _)| db.per_phase.iter().find(|d| d.phase == *name))
        .collect()
}

fn finished_jobs(phases: &[(&str, u64)]) -> u64 {
    phases.iter().map(|(_, finished)| finished).sum()
}

/// `total × scale / jobs`, rounded; none without jobs or without a positive total.
fn per_jobs(total: i64, scale: f64, jobs: u64) -> Option<f64> {
    (jobs > 0 && total > 0).then(|| (total as f64 * scale / jobs as f64).round())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Engine;

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
        let c = JobCost::of(&db, &[("a", 500), ("b", 500)], Engine::Postgres);
        assert_eq!(c.wal_bytes_per_job, Some(1000.0));
        // 16 KiB grown over 1,000 jobs.
        assert_eq!(c.bytes_per_1k_jobs, Some(16384.0));
        assert_eq!((c.autovacuums, c.vacuums), (3, 0));
        // No finished jobs: nothing per job.
        assert_eq!(wal_bytes_per_job(&db, &[("a", 0)]), None);
        assert!(
            c.line(Engine::Postgres)
                .starts_with("Cost per job: 1000 WAL bytes per completed job")
        );
        // A broker's memory: its growth whole, never per 1,000 jobs.
        let broker = JobCost::of(&db, &[("a", 500), ("b", 500)], Engine::Rabbitmq);
        assert_eq!(broker.bytes_per_1k_jobs, None);
        // An incomplete run: nothing per job.
        let mut incomplete = c;
        incomplete.withhold_per_job();
        assert_eq!(incomplete.wal_bytes_per_job, None);
        let line = incomplete.line(Engine::Postgres);
        assert!(line.contains("not given, the run is incomplete"), "{line}");
        assert!(!line.contains("per 1,000 jobs"), "{line}");
        assert_eq!(broker.size_growth_bytes, Some(16384));
        let line = broker.line(Engine::Rabbitmq);
        assert!(
            line.contains("16384 bytes of server memory growth over the measured phases")
                && !line.contains("per 1,000 jobs"),
            "{line}"
        );
    }
}
