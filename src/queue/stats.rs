//! What the database says about the queue: one sample of statistics (for the sampler, once a
//! second) and the claim's measured plan (at phase boundaries).

use super::{JobStatus, Queue};
use crate::db::Conn;
use serde::{Deserialize, Serialize};
use sqlx::mysql::MySqlConnection;
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

/// MariaDB's counters (server-wide): commits, rollbacks, deadlocks, the redo log position
/// (the counterpart of the WAL position) and the history list length.
const MARIADB_STATUS: &str = "
SELECT VARIABLE_NAME, CAST(VARIABLE_VALUE AS SIGNED)
FROM   information_schema.GLOBAL_STATUS
WHERE  VARIABLE_NAME IN ('HANDLER_COMMIT', 'HANDLER_ROLLBACK', 'INNODB_DEADLOCKS',
                         'INNODB_LSN_CURRENT', 'INNODB_HISTORY_LIST_LENGTH')";

/// MariaDB: how long the oldest open InnoDB transaction has been running, s.
const MARIADB_OLDEST_XACT: &str = "
SELECT CAST(COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, trx_started, NOW(6))), 0) AS DOUBLE) / 1e6
FROM   information_schema.INNODB_TRX";

/// MariaDB: the run's busy sessions by thread state (the counterpart of wait events).
const MARIADB_STATES: &str = "
SELECT COALESCE(NULLIF(STATE, ''), 'CPU'), COUNT(*)
FROM   information_schema.PROCESSLIST
WHERE  DB = DATABASE() AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID()
GROUP  BY 1";

/// MariaDB: the size of each index of the table (persistent statistics).
const MARIADB_INDEXES: &str = "
SELECT index_name, CAST(stat_value * @@innodb_page_size AS SIGNED)
FROM   mysql.innodb_index_stats
WHERE  database_name = DATABASE() AND table_name = ? AND stat_name = 'size'";

impl Queue {
    /// Takes one sample; `sessions` is the `application_name` pattern of the run's sessions
    /// (PostgreSQL; MariaDB's are the run database's). A `full` sample also counts every
    /// status (a scan of the table).
    pub async fn sample(
        &self,
        conn: &mut Conn,
        sessions: &str,
        full: bool,
    ) -> sqlx::Result<DbSample> {
        let started = std::time::Instant::now();
        let mut s = DbSample::default();
        self.count_statuses(conn, full, &mut s).await?;
        match conn {
            Conn::Postgres(c) => self.sample_postgres(c, sessions, &mut s).await?,
            Conn::Mariadb(c) => self.sample_mariadb(c, &mut s).await?,
        }
        s.sample_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(s)
    }

    /// Jobs by status (`full`), or only the waiting ones.
    async fn count_statuses(
        &self,
        conn: &mut Conn,
        full: bool,
        s: &mut DbSample,
    ) -> sqlx::Result<()> {
        if full {
            let (mut processing, mut done, mut dead) = (0, 0, 0);
            for (status, n) in self.status_counts(conn).await? {
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
        Ok(())
    }

    /// MariaDB's figures: `dead_tuples` holds the history list length (undo not purged yet,
    /// the MVCC garbage a long transaction keeps), `wal_bytes` the redo log position,
    /// `live_tuples` InnoDB's row estimate; vacuum and xmin figures stay 0.
    async fn sample_mariadb(
        &self,
        conn: &mut MySqlConnection,
        s: &mut DbSample,
    ) -> sqlx::Result<()> {
        let table = self.variant().table;
        let t = super::mariadb::table_stats(self, conn).await?;
        (s.live_tuples, s.table_bytes, s.total_bytes) =
            (t.live_tuples, t.table_bytes, t.total_bytes);
        s.index_bytes = sqlx::query_as::<_, (String, i64)>(MARIADB_INDEXES)
            .bind(table)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        for (name, value) in sqlx::query_as::<_, (String, i64)>(MARIADB_STATUS)
            .fetch_all(&mut *conn)
            .await?
        {
            match name.as_str() {
                "HANDLER_COMMIT" => s.xact_commit = value,
                "HANDLER_ROLLBACK" => s.xact_rollback = value,
                "INNODB_DEADLOCKS" => s.deadlocks = value,
                "INNODB_LSN_CURRENT" => s.wal_bytes = value,
                "INNODB_HISTORY_LIST_LENGTH" => s.dead_tuples = value,
                _ => {}
            }
        }
        s.oldest_xact_s = sqlx::query_scalar(MARIADB_OLDEST_XACT)
            .fetch_one(&mut *conn)
            .await?;
        s.wait_events = sqlx::query_as::<_, (String, i64)>(MARIADB_STATES)
            .fetch_all(&mut *conn)
            .await?
            .into_iter()
            .collect();
        Ok(())
    }

    async fn sample_postgres(
        &self,
        conn: &mut PgConnection,
        sessions: &str,
        s: &mut DbSample,
    ) -> sqlx::Result<()> {
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
        Ok(())
    }

    /// Runs the claim once under `EXPLAIN (ANALYZE, BUFFERS)` inside a transaction that is
    /// rolled back: the claim's real cost right now, without claiming anything.
    pub async fn probe_claim(&self, conn: &mut Conn) -> sqlx::Result<ClaimProbe> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return self.probe_claim_mariadb(c).await,
        };
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

impl Queue {
    /// MariaDB: the claim's locking SELECT under `ANALYZE FORMAT=JSON`, in a transaction
    /// that is rolled back; `rows` is the rows the first table read.
    async fn probe_claim_mariadb(&self, conn: &mut MySqlConnection) -> sqlx::Result<ClaimProbe> {
        sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
        let mut query = sqlx::query_scalar(AssertSqlSafe(format!(
            "ANALYZE FORMAT=JSON {}",
            self.claim_sql()
        )))
        .persistent(false);
        if let super::ClaimShape::Batch(n) = self.variant().claim {
            query = query.bind(i64::from(n));
        }
        let result: sqlx::Result<String> = query.fetch_one(&mut *conn).await;
        sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await?;
        let json: serde_json::Value = serde_json::from_str(&result?).unwrap_or_default();
        Ok(read_mariadb_probe(&json))
    }
}

/// Reads MariaDB's `ANALYZE FORMAT=JSON` output: the time, and each table's access, rows
/// read and pages accessed (as "buffers hit") or read from disk.
fn read_mariadb_probe(json: &serde_json::Value) -> ClaimProbe {
    let block = &json["query_block"];
    let mut probe = ClaimProbe {
        execution_ms: block["r_total_time_ms"].as_f64().unwrap_or(0.0),
        ..ClaimProbe::default()
    };
    let mut stack = vec![block];
    while let Some(node) = stack.pop() {
        if let Some(table) = node.get("table") {
            let name = table["table_name"].as_str().unwrap_or("?");
            let access = table["access_type"].as_str().unwrap_or("?");
            probe.plan.push(match table["key"].as_str() {
                Some(key) => format!("{access} using {key} on {name}"),
                None => format!("{access} on {name}"),
            });
            if probe.plan.len() == 1 {
                probe.rows = table["r_rows"].as_f64().unwrap_or(0.0).round() as i64;
            }
            let stats = &table["r_engine_stats"];
            probe.buffers_hit += stats["pages_accessed"].as_i64().unwrap_or(0);
            probe.buffers_read += stats["pages_read_count"].as_i64().unwrap_or(0);
        }
        let children: Vec<&serde_json::Value> = match node {
            serde_json::Value::Object(map) => map.values().collect(),
            serde_json::Value::Array(items) => items.iter().collect(),
            _ => Vec::new(),
        };
        stack.extend(
            children
                .into_iter()
                .rev()
                .filter(|v| v.is_object() || v.is_array()),
        );
    }
    probe
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
    fn a_mariadb_probe_reads_the_tables_of_its_nested_loop() {
        let json: serde_json::Value = serde_json::from_str(
            r#"{"query_block": {"r_total_time_ms": 0.12, "nested_loop": [{"table": {
                 "table_name": "job_queue", "access_type": "ref", "key": "idx_job_queue_pending",
                 "r_rows": 1, "r_engine_stats": {"pages_accessed": 2}}}]}}"#,
        )
        .unwrap();
        let p = read_mariadb_probe(&json);
        assert_eq!(p.plan, vec!["ref using idx_job_queue_pending on job_queue"]);
        assert_eq!((p.rows, p.buffers_hit, p.buffers_read), (1, 2, 0));
        assert_eq!(p.execution_ms, 0.12);
    }

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
