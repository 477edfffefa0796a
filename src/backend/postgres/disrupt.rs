//! Faults on PostgreSQL: terminated backends, a pinned xmin horizon, long REPEATABLE READ
//! readers, and the server's view of a worker's session.

use super::link::PgLink;
use crate::backend::error::BackendError;
use crate::backend::seam::{Mvcc, Readers, SessionStates, Sessions, Vacuum};
use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Terminates up to $2 backends of this run whose `application_name` matches one of the
/// patterns $1, chosen at random.
const TERMINATE_BACKENDS: &str = "
SELECT pg_terminate_backend(pid)
FROM  (SELECT pid
       FROM   pg_stat_activity
       WHERE  datname = current_database()
         AND  application_name LIKE ANY($1::text[])
         AND  pid <> pg_backend_pid()
       ORDER  BY random()
       LIMIT  $2) AS victims";

/// The run's sessions whose snapshot or transaction is at least as old as the released XID
/// ($1, a `txid_current()` value). A statement that took its snapshot while the XID was held
/// keeps VACUUM's horizon there until it ends, so the "after" VACUUM waits for them.
const OLDER_THAN_RELEASED: &str = "
SELECT count(*)
FROM   pg_stat_activity
WHERE  datname = current_database()
  AND  pid <> pg_backend_pid()
  AND  (age(backend_xmin) >= age(($1 % 4294967296)::text::xid)
        OR age(backend_xid) >= age(($1 % 4294967296)::text::xid))";

/// A worker's session state as the server sees it. A transaction that has not written yet
/// (a `BEGIN` sent ahead with the last `COMMIT`, before its claim) holds no job, whatever
/// its state says.
const SESSION_STATE: &str = "
SELECT CASE WHEN state = 'idle in transaction' AND backend_xid IS NULL
            THEN 'idle in an empty transaction' ELSE state END
FROM   pg_stat_activity
WHERE  datname = current_database()
  AND  application_name = $1";

/// Paces this session's VACUUM as autovacuum paces its own (its cost delay and limit, where
/// they are set; otherwise VACUUM's, as autovacuum then uses).
const PACE_AS_AUTOVACUUM: &str = "
SELECT set_config('vacuum_cost_delay',
                  CASE current_setting('autovacuum_vacuum_cost_delay')
                       WHEN '-1' THEN current_setting('vacuum_cost_delay')
                       ELSE current_setting('autovacuum_vacuum_cost_delay') END, false),
       set_config('vacuum_cost_limit',
                  CASE current_setting('autovacuum_vacuum_cost_limit')
                       WHEN '-1' THEN current_setting('vacuum_cost_limit')
                       ELSE current_setting('autovacuum_vacuum_cost_limit') END, false)";

impl PgLink {
    fn application_name(&self, role: &str) -> String {
        format!("dbq-bench/{}/{role}", self.shared.namespace)
    }
}

#[async_trait]
impl Sessions for PgLink {
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError> {
        let patterns: Vec<String> = roles
            .iter()
            .map(|role| format!("{}%", self.application_name(role)))
            .collect();
        let done: Vec<bool> = sqlx::query_scalar(TERMINATE_BACKENDS)
            .bind(&patterns)
            .bind(i64::from(count))
            .fetch_all(&mut self.conn)
            .await?;
        let n = done.iter().filter(|ok| **ok).count() as u64;
        Ok(("pg_terminate_backend", n))
    }
}

#[async_trait]
impl Mvcc for PgLink {
    /// A transaction with an XID: VACUUM can remove no row version newer than it.
    async fn hold_horizon(&mut self) -> Result<i64, BackendError> {
        self.execute("BEGIN").await?;
        Ok(sqlx::query_scalar("SELECT txid_current()")
            .fetch_one(&mut self.conn)
            .await?)
    }

    async fn await_horizon(
        &mut self,
        held: i64,
        wait: Duration,
        stop: &CancellationToken,
    ) -> Option<u64> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let still: i64 = sqlx::query_scalar(OLDER_THAN_RELEASED)
                .bind(held)
                .fetch_one(&mut self.conn)
                .await
                .ok()?;
            if still == 0 {
                return None;
            }
            if tokio::time::Instant::now() >= deadline || stop.is_cancelled() {
                return Some(still as u64);
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                _ = stop.cancelled() => {}
            }
        }
    }
}

#[async_trait]
impl Vacuum for PgLink {
    async fn clean_up(&mut self) -> Result<(), BackendError> {
        // The table name is the design's constant, not user input.
        let vacuum = format!("VACUUM {}", self.shared.design.table);
        Ok(self.execute(&vacuum).await?)
    }

    async fn hold_autovacuum(&mut self, off: bool) -> Result<(), BackendError> {
        // The table name is the design's constant, not user input.
        // Storage parameters belong to a plain table, or to a partitioned table's leaves
        // (pg_partition_tree lists no rows for a plain table).
        let table = &self.shared.design.table;
        let change = match off {
            true => "SET (autovacuum_enabled = off)",
            false => "RESET (autovacuum_enabled)",
        };
        let alter = format!(
            "DO $$ DECLARE leaf regclass; BEGIN \
               FOR leaf IN SELECT oid::regclass FROM pg_class \
                             WHERE oid = '{table}'::regclass AND relkind = 'r' \
                           UNION ALL \
                           SELECT relid FROM pg_partition_tree('{table}') WHERE isleaf LOOP \
                 EXECUTE format('ALTER TABLE %s {change}', leaf); \
               END LOOP; \
             END $$"
        );
        Ok(self.execute(&alter).await?)
    }

    /// Autovacuum analyzes a table whose changes pass its threshold too, as a fresh queue's
    /// have by the time its first vacuum comes.
    async fn vacuum_as_autovacuum(&mut self) -> Result<(), BackendError> {
        sqlx::query(PACE_AS_AUTOVACUUM)
            .execute(&mut self.conn)
            .await?;
        let vacuum = format!("VACUUM (ANALYZE) {}", self.shared.design.table);
        Ok(self.execute(&vacuum).await?)
    }
}

#[async_trait]
impl Readers for PgLink {
    async fn begin_snapshot(&mut self) -> Result<(), BackendError> {
        Ok(self
            .execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .await?)
    }

    async fn scan(&mut self) -> Result<(), BackendError> {
        // The table name is the design's constant, not user input.
        let scan = format!("SELECT count(*) FROM {}", self.shared.design.table);
        sqlx::query(AssertSqlSafe(scan))
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
}

#[async_trait]
impl SessionStates for PgLink {
    async fn session_state(&mut self, role: &str) -> Result<Option<String>, BackendError> {
        let name = self.application_name(role);
        Ok(sqlx::query_scalar(SESSION_STATE)
            .bind(name)
            .fetch_optional(&mut self.conn)
            .await?)
    }
}
