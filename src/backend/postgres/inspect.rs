//! What the run's own PostgreSQL connections read: set-up steps, the sampler's statistics
//! and claim probes, and the proof's questions to the table.

use super::link::PgLink;
use crate::backend::error::BackendError;
use crate::backend::figures::{ClaimProbe, DbSample, TableReads, TableStats};
use crate::backend::job::{JobId, JobStatus, TableMismatch};
use crate::backend::seam::{Audit, Inspect, Planner};
use crate::backend::sql::count_statuses;
use async_trait::async_trait;
use sqlx::{AssertSqlSafe, Row};

const AUDITED_COMPLETIONS: &str = include_str!("audited_completions.sql");
const TABLE: &str = include_str!("stats/table.sql");
const OWN_READS: &str = include_str!("stats/own_reads.sql");
const TABLE_SIZES: &str = include_str!("stats/table_sizes.sql");
const INDEXES: &str = include_str!("stats/indexes.sql");
const SIDE_TABLE: &str = include_str!("stats/side_table.sql");
const DATABASE: &str = include_str!("stats/database.sql");
const WAIT_EVENTS: &str = include_str!("stats/wait_events.sql");

impl PgLink {
    /// The claim's statement with `prefix` (`EXPLAIN …`), its batch size bound.
    fn claim_with<'q>(
        &self,
        text: String,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let query = sqlx::query(AssertSqlSafe(text)).persistent(false);
        super::link::bind_claim(&self.shared.design, query)
    }

    /// Jobs by status (`full`: a scan of the table), or only the waiting ones. The count of
    /// waiting jobs is planned afresh each time (not prepared): a plan kept from a nearly
    /// empty table would scan the whole table every second instead of the pending index.
    async fn statuses_of(&mut self, full: bool, s: &mut DbSample) -> Result<(), BackendError> {
        if !full {
            let pending = self.shared.design.sql.pending_count.as_str();
            s.pending = sqlx::query_scalar(AssertSqlSafe(pending))
                .persistent(false)
                .fetch_one(&mut self.conn)
                .await?;
            return Ok(());
        }
        let counts = self.status_counts().await?;
        count_statuses(&self.shared.design, counts, s)
    }

    /// What this session read of the queue table and has not yet reported to the server's
    /// counters (PostgreSQL reports a session's counts when it goes idle, at most once a
    /// second, so this spans its transactions since then).
    async fn unreported_reads(&mut self) -> sqlx::Result<TableReads> {
        let row = sqlx::query(OWN_READS)
            .bind(self.shared.design.table.as_str())
            .fetch_one(&mut self.conn)
            .await?;
        reads_of(&row)
    }

    /// The table's and the database's figures, and the run's sessions' wait events.
    async fn server_figures(&mut self, s: &mut DbSample) -> sqlx::Result<()> {
        let table = self.shared.design.table.as_str();
        let t = sqlx::query(TABLE)
            .bind(table)
            .fetch_one(&mut self.conn)
            .await?;
        s.live_tuples = t.try_get("live_tuples")?;
        s.dead_tuples = t.try_get("dead_tuples")?;
        s.vacuums = t.try_get("vacuums")?;
        s.autovacuums = t.try_get("autovacuums")?;
        s.analyzes = t.try_get("analyzes")?;
        s.autoanalyzes = t.try_get("autoanalyzes")?;
        s.table_bytes = t.try_get("table_bytes")?;
        s.total_bytes = t.try_get("total_bytes")?;
        s.reads = Some(reads_of(&t)?);
        s.index_bytes = sqlx::query_as::<_, (String, i64)>(INDEXES)
            .bind(table)
            .fetch_all(&mut self.conn)
            .await?
            .into_iter()
            .collect();
        for side in &self.shared.design.side_tables {
            let (rows, bytes): (i64, i64) = sqlx::query_as(SIDE_TABLE)
                .bind(side)
                .fetch_one(&mut self.conn)
                .await?;
            s.server.insert(format!("{side}_rows"), rows);
            s.server.insert(format!("{side}_bytes"), bytes);
        }
        let d = sqlx::query(DATABASE).fetch_one(&mut self.conn).await?;
        s.xact_commit = d.try_get("xact_commit")?;
        s.xact_rollback = d.try_get("xact_rollback")?;
        s.deadlocks = d.try_get("deadlocks")?;
        s.wal_bytes = d.try_get("wal_bytes")?;
        s.xmin_age_xids = d.try_get("xmin_age_xids")?;
        s.oldest_xact_s = d.try_get("oldest_xact_s")?;
        s.notify_queue_usage = d.try_get("notify_queue_usage")?;
        s.checkpoints = d.try_get("checkpoints")?;
        let sessions = format!("dbq-bench/{}/%", self.shared.namespace);
        s.wait_events = sqlx::query_as::<_, (String, i64)>(WAIT_EVENTS)
            .bind(sessions)
            .fetch_all(&mut self.conn)
            .await?
            .into_iter()
            .collect();
        Ok(())
    }
}

#[async_trait]
impl Inspect for PgLink {
    /// One transaction, so that its own reads of the queue table (the status counts) can be
    /// told from everyone else's: the session's reads not yet reported, before and after
    /// (nothing is reported inside a transaction), give `own_reads`; those before, what
    /// `reads` cannot hold yet of the earlier samples' (`own_unreported`).
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let started = std::time::Instant::now();
        let mut s = DbSample::default();
        self.execute("BEGIN").await?;
        let sampled = async {
            // A parallel scan's workers report their reads as sessions of their own, which
            // pg_stat_xact of this one does not show: the sample reads the table alone.
            self.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                .await?;
            let before = self.unreported_reads().await?;
            self.statuses_of(full, &mut s).await?;
            self.server_figures(&mut s).await?;
            s.own_reads = Some(self.unreported_reads().await?.minus(before));
            s.own_unreported = Some(before);
            Ok::<(), BackendError>(())
        }
        .await;
        let ended = match sampled {
            Ok(()) => self.execute("COMMIT").await,
            Err(_) => self.execute("ROLLBACK").await,
        };
        sampled?;
        ended?;
        s.sample_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(s)
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let (live_tuples, dead_tuples, table_bytes, total_bytes) = sqlx::query_as(TABLE_SIZES)
            .bind(self.shared.design.table.as_str())
            .fetch_one(&mut self.conn)
            .await?;
        Ok(TableStats {
            live_tuples,
            dead_tuples,
            table_bytes,
            total_bytes,
        })
    }

    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError> {
        let sql = self.shared.design.sql.status_counts.as_str();
        Ok(sqlx::query_as(AssertSqlSafe(sql))
            .fetch_all(&mut self.conn)
            .await?)
    }

    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        let d = &self.shared.design;
        let rows: Vec<(JobId, String, Option<i32>)> =
            sqlx::query_as(AssertSqlSafe(d.sql.job_status.as_str()))
                .bind(ids)
                .fetch_all(&mut self.conn)
                .await?;
        rows.into_iter()
            .map(|(id, w, retries)| Ok((id, d.status("job_status.sql", &w)?, retries)))
            .collect()
    }

    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        let sql = self.shared.design.sql.jobs_by_key.as_str();
        Ok(sqlx::query_as(AssertSqlSafe(sql))
            .bind(keys)
            .fetch_all(&mut self.conn)
            .await?)
    }

    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError> {
        let sql = self.shared.design.sql.ledger_check.as_str();
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(ids)
            .bind(expected)
            .fetch_all(&mut self.conn)
            .await?;
        let d = &self.shared.design;
        Ok(rows
            .iter()
            .map(|r| {
                let word: String = r.try_get("status")?;
                let table_status = match word.as_str() {
                    "missing" => word,
                    _ => d.status("ledger_check.sql", &word)?.to_string(),
                };
                Ok(TableMismatch {
                    id: r.try_get("id")?,
                    table_status,
                    expected: r.try_get("expected")?,
                })
            })
            .collect::<Result<_, BackendError>>()?)
    }

    /// The design's statement wrapped in the range, which PostgreSQL pushes down into it, so
    /// each chunk of the proof reads only its stretch.
    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let inner = self
            .shared
            .design
            .sql
            .untracked
            .trim()
            .trim_end_matches(';');
        let sql = format!(
            "SELECT u.id, u.status FROM (\n{inner}\n) AS u WHERE u.id >= $2 AND u.id < $3 ORDER BY u.id"
        );
        Ok(sqlx::query_as(AssertSqlSafe(sql))
            .bind(known)
            .bind(from)
            .bind(to)
            .fetch_all(&mut self.conn)
            .await?)
    }
}

#[async_trait]
impl Audit for PgLink {
    async fn audited_completions(
        &mut self,
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, i64)>, BackendError> {
        Ok(sqlx::query_as(AUDITED_COMPLETIONS)
            .bind(from)
            .bind(to)
            .fetch_all(&mut self.conn)
            .await?)
    }
}

#[async_trait]
impl Planner for PgLink {
    async fn analyze(&mut self) -> Result<(), BackendError> {
        // The table name is the design's constant, not user input.
        let analyze = format!("ANALYZE {}", self.shared.design.table);
        Ok(self.execute(&analyze).await?)
    }

    async fn explain_claim(&mut self) -> Result<Vec<String>, BackendError> {
        // The claim text is the design's own file, checked when the run started.
        let text = format!("EXPLAIN {}", self.shared.design.sql.claim);
        let rows = self.claim_with(text).fetch_all(&mut self.conn).await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get::<String, _>(0))
            .collect::<sqlx::Result<_>>()?)
    }

    /// Runs the claim once under `EXPLAIN (ANALYZE, BUFFERS)` inside a transaction that is
    /// rolled back: the claim's real cost right now, without claiming anything.
    async fn probe_claim(&mut self) -> Result<ClaimProbe, BackendError> {
        self.execute("BEGIN").await?;
        let text = format!(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {}",
            self.shared.design.sql.claim
        );
        let result = self.claim_with(text).fetch_one(&mut self.conn).await;
        self.execute("ROLLBACK").await?;
        let json: sqlx::types::Json<serde_json::Value> = result?.try_get(0)?;
        Ok(read_probe(&json.0))
    }
}

/// The read counters of a row of stats/table.sql or stats/own_reads.sql.
fn reads_of(row: &sqlx::postgres::PgRow) -> sqlx::Result<TableReads> {
    Ok(TableReads {
        seq_scans: row.try_get("seq_scans")?,
        seq_rows: row.try_get("seq_rows")?,
        index_scans: row.try_get("index_scans")?,
        index_rows: row.try_get("index_rows")?,
    })
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
