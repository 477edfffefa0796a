//! What the run's own MariaDB connections read. MariaDB's figures fill the common sample
//! (`wal_bytes` holds the redo log position, `held` InnoDB's row estimate) and its row
//! versions in its own words: the dead versions are InnoDB's history list length (undo not
//! purged yet, the MVCC garbage a long transaction keeps); it runs no vacuum and tells no
//! xmin horizon.

use super::link::{MariaLink, json_ids};
use crate::backend::error::BackendError;
use crate::backend::figures::{RowVersions, ClaimProbe, DbSample, TableStats};
use crate::backend::job::JobId;
use crate::backend::sql::Shared;
use crate::backend::sql::bystander::BystanderSql;
use crate::backend::sql::design::SqlDesign;
use crate::backend::sql::link::{SqlLink, SqlQuery};
use sqlx::mysql::{MySqlConnection, MySqlRow};
use crate::backend::sql;
use sqlx::{AssertSqlSafe, MySql, Row};

const AUDITED_COMPLETIONS: &str = include_str!("audited_completions.sql");

/// The table's rows (InnoDB's estimate), its sizes, and InnoDB's history list length.
const TABLE_SIZES: &str = "
SELECT CAST(t.TABLE_ROWS AS SIGNED),
       (SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'),
       CAST(t.DATA_LENGTH AS SIGNED),
       CAST(t.DATA_LENGTH + t.INDEX_LENGTH AS SIGNED)
FROM   information_schema.TABLES t
WHERE  t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = ?";

/// Server-wide counters: commits, rollbacks, deadlocks, the redo log position and the
/// history list length.
const STATUS: &str = "
SELECT VARIABLE_NAME, CAST(VARIABLE_VALUE AS SIGNED)
FROM   information_schema.GLOBAL_STATUS
WHERE  VARIABLE_NAME IN ('HANDLER_COMMIT', 'HANDLER_ROLLBACK', 'INNODB_DEADLOCKS',
                         'INNODB_LSN_CURRENT', 'INNODB_HISTORY_LIST_LENGTH')";

/// How long the oldest open InnoDB transaction has been running, s.
const OLDEST_XACT: &str = "
SELECT CAST(COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, trx_started, NOW(6))), 0) AS DOUBLE) / 1e6
FROM   information_schema.INNODB_TRX";

/// The run's busy sessions by thread state (the counterpart of wait events).
const STATES: &str = "
SELECT COALESCE(NULLIF(STATE, ''), 'CPU'), COUNT(*)
FROM   information_schema.PROCESSLIST
WHERE  DB = DATABASE() AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID()
GROUP  BY 1";

/// The size of each index of the table (persistent statistics).
const INDEXES: &str = "
SELECT index_name, CAST(stat_value * @@innodb_page_size AS SIGNED)
FROM   mysql.innodb_index_stats
WHERE  database_name = DATABASE() AND table_name = ? AND stat_name = 'size'";

impl MariaLink {
    async fn server_figures(&mut self, s: &mut DbSample) -> Result<(), BackendError> {
        let t = self.table_stats().await?;
        (s.held, s.table_bytes, s.total_bytes) = (t.live_tuples, t.table_bytes, t.total_bytes);
        // InnoDB purges instead of vacuuming: its undo history is the versions it keeps.
        let mut versions = RowVersions::default();
        s.index_bytes = sqlx::query_as::<_, (String, i64)>(INDEXES)
            .bind(self.shared.design.table.as_str())
            .fetch_all(&mut self.conn)
            .await?
            .into_iter()
            .collect();
        for (name, value) in sqlx::query_as::<_, (String, i64)>(STATUS)
            .fetch_all(&mut self.conn)
            .await?
        {
            match name.as_str() {
                "HANDLER_COMMIT" => s.xact_commit = value,
                "HANDLER_ROLLBACK" => s.xact_rollback = value,
                "INNODB_DEADLOCKS" => s.deadlocks = value,
                "INNODB_LSN_CURRENT" => s.wal_bytes = value,
                "INNODB_HISTORY_LIST_LENGTH" => versions.dead = value,
                _ => {}
            }
        }
        s.versions = Some(versions);
        s.oldest_xact_s = sqlx::query_scalar(OLDEST_XACT)
            .fetch_one(&mut self.conn)
            .await?;
        s.wait_events = sqlx::query_as::<_, (String, i64)>(STATES)
            .fetch_all(&mut self.conn)
            .await?
            .into_iter()
            .collect();
        Ok(())
    }
}

/// The dialect of the proof's questions, the planner, the probe and the audit
/// (sql/link.rs): PostgreSQL's, statement for statement, but MariaDB has no arrays: ids go
/// in as JSON text (`json_ids`) and come back out of JSON_TABLE, and its statements bind `?`
/// in order rather than `$n`.
impl SqlLink for MariaLink {
    type Db = MySql;
    const BYSTANDER: BystanderSql = super::bystand::SQL;
    const AUDITED_COMPLETIONS: &'static str = AUDITED_COMPLETIONS;
    const ANALYZE: &'static str = "ANALYZE TABLE";
    /// The claim's locking SELECT under `ANALYZE FORMAT=JSON`, in a transaction rolled
    /// back; `rows` is the rows the first table read.
    const PROBE: &'static str = "ANALYZE FORMAT=JSON";

    fn parts(&mut self) -> (&mut MySqlConnection, &Shared) {
        (&mut self.conn, &self.shared)
    }

    fn into_conn(self) -> MySqlConnection {
        self.conn
    }

    fn bind_claim<'q>(d: &SqlDesign, query: SqlQuery<'q, MySql>) -> SqlQuery<'q, MySql> {
        super::link::bind_claim(d, query)
    }

    fn bind_ids<'q>(query: SqlQuery<'q, MySql>, ids: &'q [JobId]) -> SqlQuery<'q, MySql> {
        query.bind(json_ids(ids))
    }

    fn bind_keys<'q>(query: SqlQuery<'q, MySql>, keys: &'q [String]) -> SqlQuery<'q, MySql> {
        query.bind(json(&keys))
    }

    /// The ids and words as one JSON array of `[id, word]` pairs.
    fn bind_expected<'q>(
        query: SqlQuery<'q, MySql>,
        ids: &'q [JobId],
        expected: &'q [&'q str],
    ) -> SqlQuery<'q, MySql> {
        let pairs: Vec<(i64, &str)> = ids.iter().copied().zip(expected.iter().copied()).collect();
        query.bind(json(&pairs))
    }

    /// The design's statement binds the range's ends, then the known ids.
    fn untracked<'q>(
        d: &SqlDesign,
        known: &'q [JobId],
        from: JobId,
        to: JobId,
    ) -> SqlQuery<'q, MySql> {
        let query = sqlx::query(AssertSqlSafe(d.sql.untracked.clone()));
        query.bind(from).bind(to).bind(json_ids(known))
    }

    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let started = std::time::Instant::now();
        let mut s = DbSample::default();
        sql::inspect::statuses_into::<MySql>(&mut self.conn, &self.shared.design, full, &mut s).await?;
        self.server_figures(&mut s).await?;
        s.sample_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(s)
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let (live_tuples, dead_tuples, table_bytes, total_bytes): (i64, Option<i64>, i64, i64) =
            sqlx::query_as(TABLE_SIZES)
                .bind(self.shared.design.table.as_str())
                .fetch_one(&mut self.conn)
                .await?;
        Ok(TableStats {
            live_tuples,
            dead_tuples: dead_tuples.unwrap_or(0),
            table_bytes,
            total_bytes,
        })
    }

    /// One line per table the claim's SELECT reads.
    fn explain_line(r: &MySqlRow) -> sqlx::Result<String> {
        let get = |c: &str| r.try_get::<Option<String>, _>(c).ok().flatten();
        Ok(format!(
            "{} on {} using {} ({})",
            get("type").unwrap_or_default(),
            get("table").unwrap_or_default(),
            get("key").unwrap_or_else(|| "no index".into()),
            get("Extra").unwrap_or_default()
        ))
    }

    fn read_probe(row: &MySqlRow) -> Result<ClaimProbe, BackendError> {
        let text: String = row.try_get(0)?;
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        Ok(read_probe(&json))
    }
}

/// Reads MariaDB's `ANALYZE FORMAT=JSON` output: the time, and each table's access, rows
/// read and pages accessed (as "buffers hit") or read from disk.
fn read_probe(json: &serde_json::Value) -> ClaimProbe {
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

/// A list as JSON text; a list of strings and numbers always encodes.
fn json<T: serde::Serialize + ?Sized>(list: &T) -> String {
    serde_json::to_string(list).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reads_the_tables_of_its_nested_loop() {
        let json: serde_json::Value = serde_json::from_str(
            r#"{"query_block": {"r_total_time_ms": 0.12, "nested_loop": [{"table": {
                 "table_name": "job_queue", "access_type": "ref", "key": "idx_job_queue_pending",
                 "r_rows": 1, "r_engine_stats": {"pages_accessed": 2}}}]}}"#,
        )
        .unwrap();
        let p = read_probe(&json);
        assert_eq!(p.plan, vec!["ref using idx_job_queue_pending on job_queue"]);
        assert_eq!((p.rows, p.buffers_hit, p.buffers_read), (1, 2, 0));
        assert_eq!(p.execution_ms, 0.12);
    }
}
