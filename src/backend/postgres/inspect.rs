//! What the run's own PostgreSQL connections read: set-up steps, the sampler's statistics
//! and claim probes, and the proof's questions to the table.

use super::link::PgLink;
use crate::backend::error::BackendError;
use crate::backend::figures::{RowVersions, ClaimProbe, DbSample, TableReads, TableStats};
use crate::backend::job::JobId;
use crate::backend::seam::{Outbox, Readers, SessionStates, Vacuum};
use crate::backend::sql::Shared;
use crate::backend::sql::bystander::BystanderSql;
use crate::backend::sql::design::SqlDesign;
use crate::backend::sql::link::{SqlLink, SqlQuery};
use sqlx::postgres::{PgConnection, PgRow};
use crate::backend::sql;
use sqlx::{AssertSqlSafe, Postgres, Row};

const AUDITED_COMPLETIONS: &str = include_str!("audited_completions.sql");
const TABLE: &str = include_str!("stats/table.sql");
const OWN_READS: &str = include_str!("stats/own_reads.sql");
const TABLE_SIZES: &str = include_str!("stats/table_sizes.sql");
const INDEXES: &str = include_str!("stats/indexes.sql");
const SIDE_TABLE: &str = include_str!("stats/side_table.sql");
const DATABASE: &str = include_str!("stats/database.sql");
const WAIT_EVENTS: &str = include_str!("stats/wait_events.sql");

impl PgLink {
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
        s.held = t.try_get("live_tuples")?;
        let mut versions = RowVersions {
            dead: t.try_get("dead_tuples")?,
            vacuums: t.try_get("vacuums")?,
            autovacuums: t.try_get("autovacuums")?,
            analyzes: t.try_get("analyzes")?,
            autoanalyzes: t.try_get("autoanalyzes")?,
            horizon_age_xids: None,
        };
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
        versions.horizon_age_xids = Some(d.try_get("xmin_age_xids")?);
        s.versions = Some(versions);
        s.oldest_xact_s = d.try_get("oldest_xact_s")?;
        s.notify_queue_usage = Some(d.try_get("notify_queue_usage")?);
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

/// The dialect of the proof's questions, the planner, the probe and the audit
/// (sql/link.rs): lists bound as arrays.
impl SqlLink for PgLink {
    type Db = Postgres;
    const BYSTANDER: BystanderSql = super::bystand::SQL;
    const AUDITED_COMPLETIONS: &'static str = AUDITED_COMPLETIONS;
    const ANALYZE: &'static str = "ANALYZE";
    /// The claim run once under `EXPLAIN (ANALYZE, BUFFERS)`, in a transaction rolled back.
    const PROBE: &'static str = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)";

    fn parts(&mut self) -> (&mut PgConnection, &Shared) {
        (&mut self.conn, &self.shared)
    }

    fn into_conn(self) -> PgConnection {
        self.conn
    }

    fn own_outbox(&mut self) -> Option<&mut dyn Outbox> {
        Some(self)
    }

    fn own_session_states(&mut self) -> Option<&mut dyn SessionStates> {
        Some(self)
    }

    fn own_vacuum(&mut self) -> Option<&mut dyn Vacuum> {
        Some(self)
    }

    fn own_readers(&mut self) -> Option<&mut dyn Readers> {
        Some(self)
    }

    fn bind_claim<'q>(d: &SqlDesign, query: SqlQuery<'q, Postgres>) -> SqlQuery<'q, Postgres> {
        super::link::bind_claim(d, query)
    }

    fn bind_ids<'q>(query: SqlQuery<'q, Postgres>, ids: &'q [JobId]) -> SqlQuery<'q, Postgres> {
        query.bind(ids)
    }

    fn bind_keys<'q>(query: SqlQuery<'q, Postgres>, keys: &'q [String]) -> SqlQuery<'q, Postgres> {
        query.bind(keys)
    }

    fn bind_expected<'q>(
        query: SqlQuery<'q, Postgres>,
        ids: &'q [JobId],
        expected: &'q [&'q str],
    ) -> SqlQuery<'q, Postgres> {
        query.bind(ids).bind(expected)
    }

    /// The design's statement wrapped in the range, which PostgreSQL pushes down into it, so
    /// each chunk of the proof reads only its stretch.
    fn untracked<'q>(
        d: &SqlDesign,
        known: &'q [JobId],
        from: JobId,
        to: JobId,
    ) -> SqlQuery<'q, Postgres> {
        let inner = d.sql.untracked.trim().trim_end_matches(';');
        let sql = format!(
            "SELECT u.id, u.status FROM (\n{inner}\n) AS u WHERE u.id >= $2 AND u.id < $3 ORDER BY u.id"
        );
        sqlx::query(AssertSqlSafe(sql)).bind(known).bind(from).bind(to)
    }

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
            sql::inspect::statuses_into::<Postgres>(&mut self.conn, &self.shared.design, full, &mut s)
                .await?;
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

    fn explain_line(row: &PgRow) -> sqlx::Result<String> {
        row.try_get(0)
    }

    fn read_probe(row: &PgRow) -> Result<ClaimProbe, BackendError> {
        let json: sqlx::types::Json<serde_json::Value> = row.try_get(0)?;
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
