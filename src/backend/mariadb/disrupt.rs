//! Faults on MariaDB: killed connections and a consistent snapshot held open (InnoDB's purge
//! can remove no undo newer than its read view, so the history list grows).

use super::Sessions;
use super::link::MariaLink;
use crate::backend::error::BackendError;
use crate::backend::seam::{Mvcc, Sessions as EndSessions};
use async_trait::async_trait;
use rand::seq::SliceRandom;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The run's sessions other than the asking one (the run has a database of its own).
const RUN_SESSIONS: &str = "
SELECT ID
FROM   information_schema.PROCESSLIST
WHERE  DB = DATABASE() AND ID <> CONNECTION_ID()";

/// The transaction id of the session's own transaction.
const OWN_TRX: &str = "
SELECT CAST(trx_id AS SIGNED)
FROM   information_schema.INNODB_TRX
WHERE  trx_mysql_thread_id = CONNECTION_ID()";

#[async_trait]
impl EndSessions for MariaLink {
    /// `KILL CONNECTION` on up to `count` of the run's sessions in `roles`, chosen at
    /// random. A session this process did not open is a worker process's.
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError> {
        let ids: Vec<i64> = sqlx::query_scalar(RUN_SESSIONS)
            .fetch_all(&mut self.conn)
            .await?;
        let prefixes: Vec<String> = roles
            .iter()
            .map(|role| format!("dbq-bench/{}/{role}", self.shared.namespace))
            .collect();
        let mut victims: Vec<u64> = ids
            .into_iter()
            .map(|id| id as u64)
            .filter(|id| match Sessions::name_of(*id) {
                Some(name) => prefixes.iter().any(|p| name.starts_with(p.as_str())),
                None => roles.contains(&"worker-"),
            })
            .collect();
        victims.shuffle(&mut rand::rng());
        let mut killed = 0;
        for id in victims.into_iter().take(count as usize) {
            // `id` is an integer the server gave; KILL takes no bound parameter.
            if self.execute(&format!("KILL CONNECTION {id}")).await.is_ok() {
                killed += 1;
            }
        }
        Ok(("KILL CONNECTION", killed))
    }
}

#[async_trait]
impl Mvcc for MariaLink {
    async fn hold_horizon(&mut self) -> Result<i64, BackendError> {
        self.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            .await?;
        Ok(sqlx::query_scalar(OWN_TRX)
            .fetch_one(&mut self.conn)
            .await?)
    }

    /// InnoDB purges in the background by itself: a moment for it to catch up.
    async fn await_horizon(
        &mut self,
        _held: i64,
        _wait: Duration,
        stop: &CancellationToken,
    ) -> Option<u64> {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.cancelled() => {}
        }
        None
    }
}
