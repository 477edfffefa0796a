//! What the database says about the queue: one sample of statistics (for the sampler, once a
//! second) and the claim's measured plan (at phase boundaries).

use super::{JobStatus, Queue};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Row};
use std::collections::BTreeMap;

const TABLE: &str = include_str!("stats/table.sql");
const INDEXES: &str = include_str!("stats/indexes.sql");
const DATABASE: &str = include_str!("stats/database.sql");
const WAIT_EVENTS: &str = include_str!("stats/wait_events.sql");

/// One sample of database statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbSample {
    /// Jobs waiting: every sample counts them (from the pending index, so the cost follows
    /// the backlog, not the table).
    pub pending: i64,
    /// The other statuses need a scan of the whole table, so only full samples (the first,
    /// and one at each phase boundary) count them.
    #[serde(default)]
    pub processing: Option<i64>,
    #[serde(default)]
    pub done: Option<i64>,
    #[serde(default)]
    pub dead_letter: Option<i64>,
    /// How long the sample took, ms.
    #[serde(default)]
    pub sample_ms: f64,
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub vacuums: i64,
    pub autovacuums: i64,
    pub analyzes: i64,
    pub autoanalyzes: i64,
    pub table_bytes: i64,
    /// Table, indexes and TOAST.
    pub total_bytes: i64,
    pub index_bytes: BTreeMap<String, i64>,
    pub xact_commit: i64,
    pub xact_rollback: i64,
    pub deadlocks: i64,
    /// WAL position in bytes (differences between samples are WAL written).
    pub wal_bytes: i64,
    /// Age in transactions of the oldest snapshot held in the database (the xmin horizon).
    pub xmin_age_xids: i64,
    /// How long the oldest open transaction in the database has been running.
    pub oldest_xact_s: f64,
    /// Fraction of the LISTEN/NOTIFY queue in use.
    pub notify_queue_usage: f64,
    /// The run's non-idle sessions by wait event (`type:event`, or CPU).
    pub wait_events: BTreeMap<String, i64>,
}

/// The claim statement executed once under `EXPLAIN (ANALYZE, BUFFERS)` and rolled back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaimProbe {
    /// Shared buffers the claim touched (hit in cache + read).
    pub buffers_hit: i64,
    pub buffers_read: i64,
    pub execution_ms: f64,
    /// Rows the claim returned (0 when no job was ready).
    pub rows: i64,
    /// The plan's nodes, outermost first (e.g. "Index Scan using idx_job_queue_pending").
    pub plan: Vec<String>,
}

impl Queue {
    /// Takes one sample; `sessions` is the `application_name` pattern of the run's sessions.
    /// A `full` sample also counts every status (a scan of the table).
    pub async fn sample(
        &self,
        conn: &mut PgConnection,
        sessions: &str,
        full: bool,
    ) -> sqlx::Result<DbSample> {
        let started = std::time::Instant::now();
        let mut s = DbSample::default();
        if full {
            let status_counts = sqlx::AssertSqlSafe(self.variant().sql.status_counts.as_str());
            let (mut processing, mut done, mut dead) = (0, 0, 0);
            for (status, n) in sqlx::query_as::<_, (String, i64)>(status_counts)
                .fetch_all(&mut *conn)
                .await?
            {
                // A custom variant's table may hold statuses of its own: not counted.
                match JobStatus::parse(&status) {
                    Some(JobStatus::Pending) => s.pending = n,
                    Some(JobStatus::Processing) => processing = n,
                    Some(JobStatus::Done) => done = n,
                    Some(JobStatus::DeadLetter) => dead = n,
                    None => {}
                }
            }
            (s.processing, s.done, s.dead_letter) = (Some(processing), Some(done), Some(dead));
        } else {
            s.pending = self.pending_count(conn).await?;
        }
        let table = self.variant().table;
        let t = sqlx::query(TABLE).bind(table).fetch_one(&mut *conn).await?;
        s.live_tuples = t.try_get("live_tuples")?;
        s.dead_tuples = t.try_get("dead_tuples")?;
        s.vacuums = t.try_get("vacuums")?;
        s.autovacuums = t.try_get("autovacuums")?;
        s.analyzes = t.try_get("analyzes")?;
        s.autoanalyzes = t.try_get("autoanalyzes")?;
        s.table_bytes = t.try_get("table_bytes")?;
        s.total_bytes = t.try_get("total_bytes")?;
        s.index_bytes = sqlx::query_as::<_, (String, i64)>(INDEXES)
            .bind(table)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        let d = sqlx::query(DATABASE).fetch_one(&mut *conn).await?;
        s.xact_commit = d.try_get("xact_commit")?;
        s.xact_rollback = d.try_get("xact_rollback")?;
        s.deadlocks = d.try_get("deadlocks")?;
        s.wal_bytes = d.try_get("wal_bytes")?;
        s.xmin_age_xids = d.try_get("xmin_age_xids")?;
        s.oldest_xact_s = d.try_get("oldest_xact_s")?;
        s.notify_queue_usage = d.try_get("notify_queue_usage")?;
        s.wait_events = sqlx::query_as::<_, (String, i64)>(WAIT_EVENTS)
            .bind(sessions)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        s.sample_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(s)
    }

    /// Runs the claim once under `EXPLAIN (ANALYZE, BUFFERS)` inside a transaction that is
    /// rolled back: the claim's real cost right now, without claiming anything.
    pub async fn probe_claim(&self, conn: &mut PgConnection) -> sqlx::Result<ClaimProbe> {
        sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
        // The claim text is the variant's own file, checked when the run started.
        let mut query = sqlx::query_scalar(AssertSqlSafe(format!(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {}",
            self.claim_sql()
        )))
        .persistent(false);
        if let super::ClaimShape::Batch(n) = self.variant().claim {
            query = query.bind(n as i64);
        }
        let result: sqlx::Result<sqlx::types::Json<serde_json::Value>> =
            query.fetch_one(&mut *conn).await;
        sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await?;
        Ok(read_probe(&result?.0))
    }
}

/// Reads the figures out of `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` output.
fn read_probe(json: &serde_json::Value) -> ClaimProbe {
    let top = &json[0];
    let plan = &top["Plan"];
    let mut nodes = Vec::new();
    let mut stack = vec![plan];
    while let Some(node) = stack.pop() {
        let mut name = node["Node Type"].as_str().unwrap_or("?").to_string();
        if let Some(index) = node["Index Name"].as_str() {
            name.push_str(&format!(" using {index}"));
        }
        if let Some(rel) = node["Relation Name"].as_str() {
            name.push_str(&format!(" on {rel}"));
        }
        nodes.push(name);
        if let Some(children) = node["Plans"].as_array() {
            stack.extend(children.iter().rev());
        }
    }
    let int = |v: &serde_json::Value| v.as_i64().unwrap_or(0);
    ClaimProbe {
        buffers_hit: int(&plan["Shared Hit Blocks"]),
        buffers_read: int(&plan["Shared Read Blocks"]),
        execution_ms: top["Execution Time"].as_f64().unwrap_or(0.0),
        rows: int(&plan["Actual Rows"]),
        plan: nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_figures_come_from_the_top_plan_node() {
        let json: serde_json::Value = serde_json::from_str(
            r#"[{"Plan": {"Node Type": "ModifyTable", "Relation Name": "job_queue", "Actual Rows": 1,
                 "Shared Hit Blocks": 12, "Shared Read Blocks": 3,
                 "Plans": [{"Node Type": "Limit", "Plans": [{"Node Type": "Index Scan", "Index Name": "idx_job_queue_pending"}]}]},
                "Execution Time": 0.25}]"#,
        )
        .unwrap();
        let p = read_probe(&json);
        assert_eq!((p.buffers_hit, p.buffers_read, p.rows), (12, 3, 1));
        assert_eq!(p.execution_ms, 0.25);
        assert_eq!(
            p.plan,
            vec![
                "ModifyTable on job_queue",
                "Limit",
                "Index Scan using idx_job_queue_pending"
            ]
        );
    }
}
