//! The queue under test: one variant's behaviour and statements, bound in one place.
//!
//! A [`Variant`] (see `variant`) says how jobs are claimed, finished and waited for, and
//! carries its `.sql` files. Fleets, the sampler, faults and the accounting proof only call
//! [`Queue`] methods, so they never name a table or a column. Values are always bound
//! parameters (the pipelined completion binds them to a prepared statement's `$1`; see
//! [`Queue::complete_then`]).

mod mariadb;
mod stats;
mod status;
mod variant;

pub use stats::{ClaimProbe, DbSample};
pub use status::JobStatus;
pub use variant::{ClaimShape, CompleteShape, CustomError, Finish, Variant, VariantSql, WakeUp};

use crate::db::{Conn, RunSchema};
use crate::scenario::{BackoffPlan, Jitter, QueuePlan};
use serde::Deserialize;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Row};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

const COMPLETION_AUDIT: &str = include_str!("../../migrations/harness/0001_completion_audit.sql");
const AUDIT_DUPLICATES: &str = include_str!("audit_duplicates.sql");
const OUTBOX_SCHEMA: &str = include_str!("../../migrations/outbox/0001_orders.sql");
const OUTBOX_ORDERS: &str = include_str!("outbox_orders.sql");
const OUTBOX_PAY: &str = include_str!("outbox_pay.sql");
const OUTBOX_CHECK: &str = include_str!("outbox_check.sql");
/// The session's name for the variant's success update, prepared once per worker connection
/// ([`Queue::prepare_completion`]) so that the completion can share a message with `COMMIT`.
const PREPARED_COMPLETION: &str = "dbq_complete";
const OUTBOX_PAID: &str = include_str!("outbox_paid.sql");
const TABLE_SIZES: &str = include_str!("stats/table_sizes.sql");

/// The fields of a job payload the harness reads back. Payloads look like
/// `{"k":"<run>-p<producer>-<seq>","t":<intended µs on the run clock>,"pad":"…"}`, plus
/// `"poison":true` / `"crash":true` for jobs whose handler always fails / crashes, and
/// `"order":<id>` for outbox jobs.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct JobPayload {
    /// Intended enqueue time, µs on the run clock (see `clock`). Absent in foreign jobs.
    #[serde(default)]
    pub t: Option<u64>,
    #[serde(default)]
    pub poison: bool,
    #[serde(default)]
    pub crash: bool,
}

/// Tuple counts and sizes of the queue table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableStats {
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub table_bytes: i64,
    pub total_bytes: i64,
}

/// A job handed to a worker by the claim statement.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    pub id: i64,
    pub job_type: String,
    pub payload: JobPayload,
}

/// A job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub job_type: String,
    /// JSON text.
    pub payload: String,
    pub priority: i32,
}

/// What the failure update did to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to `pending`, to run again after the backoff.
    Retry,
    /// `max_retries` reached: moved to `dead_letter`.
    DeadLettered,
}

/// A job whose table row disagrees with what the harness's ledger expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMismatch {
    pub id: i64,
    /// The row's status, or `missing`.
    pub table_status: String,
    /// `done`, `dead_letter` or `open` (not finished, as far as the ledger knows).
    pub expected: String,
}

/// One variant plus the scenario values bound into its statements.
#[derive(Clone)]
pub struct Queue {
    variant: Arc<Variant>,
    backoff: BackoffPlan,
    max_retries: i32,
    /// The LISTEN/NOTIFY channel of the run (`notify` variant): its schema's name.
    channel: String,
}

impl Queue {
    /// The queue of a plan in the run schema `schema` (whose engine picks the variant's
    /// statements and whose name is its wake-up channel).
    pub fn new(plan: &QueuePlan, schema: &RunSchema) -> Result<Queue, CustomError> {
        Ok(Queue {
            variant: Variant::for_engine(&plan.variant, schema.engine())?.shared(),
            backoff: plan.backoff,
            max_retries: plan.max_retries,
            channel: schema.name.clone(),
        })
    }

    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    /// The claim statement's text, for reports.
    pub fn claim_sql(&self) -> &str {
        &self.variant.sql.claim
    }

    /// The channel enqueues notify and idle workers listen on.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Creates the variant's tables (and the completion audit when asked) in the schema the
    /// connection's `search_path` points at.
    pub async fn install(&self, conn: &mut Conn, completion_audit: bool) -> sqlx::Result<()> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::install(self, c, completion_audit).await,
        };
        for ddl in &self.variant.sql.schema {
            sqlx::raw_sql(AssertSqlSafe(ddl.as_str()))
                .execute(&mut *conn)
                .await?;
        }
        if completion_audit {
            sqlx::raw_sql(COMPLETION_AUDIT).execute(&mut *conn).await?;
            for ddl in &self.variant.sql.audit {
                sqlx::raw_sql(AssertSqlSafe(ddl.as_str()))
                    .execute(&mut *conn)
                    .await?;
            }
        }
        Ok(())
    }

    /// Checks a variant's statements against the installed schema: each one is prepared,
    /// and those whose rows the harness reads must return the columns it reads. Names the
    /// file of the first statement that fails. (Built-in variants pass by construction;
    /// this is for `custom` ones, before any load.)
    pub async fn check_statements(&self, conn: &mut Conn) -> Result<(), CustomError> {
        let Conn::Postgres(conn) = conn else {
            // Custom variants run on PostgreSQL only (the plan says so).
            return Ok(());
        };
        use sqlx::{Column, Executor, Statement};
        let sql = &self.variant.sql;
        let checks: [(&str, &str, &[&str]); 13] = [
            ("enqueue.sql", &sql.enqueue, &["id"]),
            ("prefill.sql", &sql.prefill, &["id"]),
            ("claim.sql", &sql.claim, &["id", "type", "payload"]),
            ("complete.sql", &sql.complete, &[]),
            ("fail.sql", &sql.fail, &["status"]),
            ("reap.sql", &sql.reap, &["id", "status"]),
            ("reap_counting.sql", &sql.reap_counting, &["id", "status"]),
            ("pending_count.sql", &sql.pending_count, &[]),
            ("status_counts.sql", &sql.status_counts, &[]),
            (
                "ledger_check.sql",
                &sql.ledger_check,
                &["id", "status", "expected"],
            ),
            ("untracked.sql", &sql.untracked, &["id", "status"]),
            (
                "job_status.sql",
                &sql.job_status,
                &["id", "status", "retry_count"],
            ),
            ("jobs_by_key.sql", &sql.jobs_by_key, &["id", "key"]),
        ];
        for (file, text, columns) in checks {
            let statement = conn
                .prepare(sqlx::SqlSafeStr::into_sql_str(AssertSqlSafe(
                    text.to_string(),
                )))
                .await
                .map_err(|e| CustomError {
                    file: self.variant.file(file),
                    reason: format!("does not prepare: {}", one_line(&e)),
                })?;
            let returned: Vec<&str> = statement.columns().iter().map(|c| c.name()).collect();
            if let Some(missing) = columns.iter().find(|c| !returned.contains(c)) {
                return Err(CustomError {
                    file: self.variant.file(file),
                    reason: format!(
                        "must return the columns {}; it returns {} (no column {missing})",
                        columns.join(", "),
                        if returned.is_empty() {
                            "none".to_string()
                        } else {
                            returned.join(", ")
                        }
                    ),
                });
            }
        }
        Ok(())
    }

    /// Creates the outbox's `orders` table with `orders` unpaid rows.
    pub async fn install_outbox(&self, conn: &mut Conn, orders: u64) -> sqlx::Result<()> {
        let conn = postgres_only(conn, "install_outbox")?;
        sqlx::raw_sql(OUTBOX_SCHEMA).execute(&mut *conn).await?;
        sqlx::query(OUTBOX_ORDERS)
            .bind(orders as i64)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// The outbox's business update (inside the enqueue transaction).
    pub async fn pay_order(&self, conn: &mut Conn, order: i64) -> sqlx::Result<u64> {
        let conn = postgres_only(conn, "pay_order")?;
        Ok(sqlx::query(OUTBOX_PAY)
            .bind(order)
            .execute(&mut *conn)
            .await?
            .rows_affected())
    }

    /// Orders that break the outbox promise: (order id, status, jobs).
    pub async fn outbox_problems(&self, conn: &mut Conn) -> sqlx::Result<Vec<(i64, String, i64)>> {
        let conn = postgres_only(conn, "outbox_problems")?;
        sqlx::query_as(OUTBOX_CHECK).fetch_all(&mut *conn).await
    }

    /// Orders whose business transaction committed.
    pub async fn paid_orders(&self, conn: &mut Conn) -> sqlx::Result<i64> {
        let conn = postgres_only(conn, "paid_orders")?;
        sqlx::query_scalar(OUTBOX_PAID).fetch_one(&mut *conn).await
    }

    /// Current status of the given jobs: (id, status); missing jobs are left out.
    pub async fn job_statuses(
        &self,
        conn: &mut Conn,
        ids: &[i64],
    ) -> sqlx::Result<Vec<(i64, JobStatus, Option<i32>)>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::job_statuses(self, c, ids).await,
        };
        sqlx::query_as(AssertSqlSafe(self.variant.sql.job_status.as_str()))
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
    }

    /// Jobs whose payload key is one of `keys`: (id, key).
    pub async fn jobs_by_key(
        &self,
        conn: &mut Conn,
        keys: &[String],
    ) -> sqlx::Result<Vec<(i64, String)>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::jobs_by_key(self, c, keys).await,
        };
        sqlx::query_as(AssertSqlSafe(self.variant.sql.jobs_by_key.as_str()))
            .bind(keys)
            .fetch_all(&mut *conn)
            .await
    }

    /// Tuple counts and sizes of the queue table.
    pub async fn table_stats(&self, conn: &mut Conn) -> sqlx::Result<TableStats> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::table_stats(self, c).await,
        };
        let (live_tuples, dead_tuples, table_bytes, total_bytes) = sqlx::query_as(TABLE_SIZES)
            .bind(self.variant.table)
            .fetch_one(&mut *conn)
            .await?;
        Ok(TableStats {
            live_tuples,
            dead_tuples,
            table_bytes,
            total_bytes,
        })
    }

    /// `VACUUM` of the queue table (outside any transaction).
    pub async fn vacuum(&self, conn: &mut Conn) -> sqlx::Result<()> {
        let conn = postgres_only(conn, "vacuum")?;
        // The table name is the variant's constant, not user input.
        sqlx::raw_sql(AssertSqlSafe(format!("VACUUM {}", self.variant.table)))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Refreshes planner statistics. Run after creating and prefilling the table and before
    /// workers prepare their statements: a claim planned on an empty table keeps a
    /// sequential scan until autoanalyze replaces it.
    pub async fn analyze(&self, conn: &mut Conn) -> sqlx::Result<()> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::analyze(self, c).await,
        };
        sqlx::raw_sql(AssertSqlSafe(format!("ANALYZE {}", self.variant.table)))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// `EXPLAIN` of the claim statement (planned, not executed), one line per plan node.
    pub async fn explain_claim(&self, conn: &mut Conn) -> sqlx::Result<Vec<String>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::explain_claim(self, c).await,
        };
        // The claim text is the variant's own file, checked when the run started.
        let text = format!("EXPLAIN {}", self.claim_sql());
        let mut query = sqlx::query(AssertSqlSafe(text)).persistent(false);
        if let ClaimShape::Batch(n) = self.variant.claim {
            query = query.bind(n as i64);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(|r| r.try_get::<String, _>(0)).collect()
    }

    pub async fn enqueue(&self, conn: &mut Conn, job: &NewJob) -> sqlx::Result<i64> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::enqueue(self, c, job).await,
        };
        let query = sqlx::query_scalar(AssertSqlSafe(self.variant.sql.enqueue.as_str()))
            .bind(&job.job_type)
            .bind(&job.payload)
            .bind(job.priority)
            .bind(self.max_retries);
        match self.variant.wake_up {
            WakeUp::Notify => query.bind(&self.channel).fetch_one(&mut *conn).await,
            WakeUp::Poll => query.fetch_one(&mut *conn).await,
        }
    }

    /// Inserts many jobs in one statement; returns their ids.
    pub async fn enqueue_batch(&self, conn: &mut Conn, jobs: &[NewJob]) -> sqlx::Result<Vec<i64>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::enqueue_batch(self, c, jobs).await,
        };
        let types: Vec<&str> = jobs.iter().map(|j| j.job_type.as_str()).collect();
        let payloads: Vec<&str> = jobs.iter().map(|j| j.payload.as_str()).collect();
        let priorities: Vec<i32> = jobs.iter().map(|j| j.priority).collect();
        sqlx::query_scalar(AssertSqlSafe(self.variant.sql.prefill.as_str()))
            .bind(types)
            .bind(payloads)
            .bind(priorities)
            .bind(self.max_retries)
            .fetch_all(&mut *conn)
            .await
    }

    /// Runs the claim statement: the jobs it handed out (none when no job is ready; at most
    /// one unless the variant claims in batches).
    pub async fn claim(&self, conn: &mut Conn) -> sqlx::Result<Vec<ClaimedJob>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::claim(self, c).await,
        };
        let mut query = sqlx::query(AssertSqlSafe(self.claim_sql()));
        if let ClaimShape::Batch(n) = self.variant.claim {
            query = query.bind(n as i64);
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter()
            .map(|row| {
                let payload: Json<JobPayload> = row
                    .try_get("payload")
                    .unwrap_or(Json(JobPayload::default()));
                Ok(ClaimedJob {
                    id: row.try_get("id")?,
                    job_type: row.try_get("type")?,
                    payload: payload.0,
                })
            })
            .collect()
    }

    /// The claim as a transaction of its own (claim mode `committed`): PostgreSQL's one
    /// statement commits by itself; MariaDB's SELECT and UPDATE are wrapped in a transaction.
    pub async fn claim_alone(&self, conn: &mut Conn) -> sqlx::Result<Vec<ClaimedJob>> {
        match conn {
            Conn::Postgres(_) => self.claim(conn).await,
            Conn::Mariadb(c) => mariadb::claim_alone(self, c).await,
        }
    }

    /// Finishes `ids` as done: one statement per job, or one for all of them when the
    /// variant completes per batch.
    pub async fn complete(&self, conn: &mut Conn, ids: &[i64]) -> sqlx::Result<()> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::complete(self, c, ids).await,
        };
        let sql = AssertSqlSafe(self.variant.sql.complete.as_str());
        match self.variant.complete {
            CompleteShape::PerBatch => {
                sqlx::query(sql).bind(ids).execute(&mut *conn).await?;
            }
            CompleteShape::PerJob => {
                for id in ids {
                    sqlx::query(AssertSqlSafe(self.variant.sql.complete.as_str()))
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// Prepares the variant's success update on this PostgreSQL session under
    /// [`PREPARED_COMPLETION`], with `$1` typed as [`Queue::complete`] binds it, for
    /// [`Queue::complete_then`]. Nothing to do on MariaDB.
    pub async fn prepare_completion(&self, conn: &mut Conn) -> sqlx::Result<()> {
        let id_type = match self.variant.complete {
            CompleteShape::PerJob => "bigint",
            CompleteShape::PerBatch => "bigint[]",
        };
        match conn {
            Conn::Postgres(_) => {
                let complete = self.variant.sql.complete.trim_end().trim_end_matches(';');
                conn.execute(&format!(
                    "PREPARE {PREPARED_COMPLETION} ({id_type}) AS\n{complete}"
                ))
                .await
            }
            Conn::Mariadb(_) => Ok(()),
        }
    }

    /// Finishes `ids` as done, then runs `then` (plain statements, e.g. `COMMIT; BEGIN`),
    /// in one round trip on PostgreSQL: the simple-query message
    /// `EXECUTE dbq_complete(42); COMMIT; BEGIN`, whose statements the server runs in order
    /// and stops at the first error, as if each had been sent alone. The server runs the
    /// variant's own statement, planned once per session; the ids are bound to its `$1`,
    /// written as the decimal integers the claim returned (no other value travels this way).
    /// Needs [`Queue::prepare_completion`] on the session first. MariaDB: two round trips.
    pub async fn complete_then(
        &self,
        conn: &mut Conn,
        ids: &[i64],
        then: &str,
    ) -> sqlx::Result<()> {
        if let Conn::Mariadb(_) = conn {
            if !ids.is_empty() {
                self.complete(conn, ids).await?;
            }
            return conn.execute(then).await;
        }
        let mut message = String::with_capacity(32 + 24 * ids.len() + then.len());
        match self.variant.complete {
            CompleteShape::PerJob => {
                for id in ids {
                    let _ = write!(message, "EXECUTE {PREPARED_COMPLETION}({id}); ");
                }
            }
            CompleteShape::PerBatch if !ids.is_empty() => {
                let list: Vec<String> = ids.iter().map(i64::to_string).collect();
                let _ = write!(
                    message,
                    "EXECUTE {PREPARED_COMPLETION}('{{{}}}'); ",
                    list.join(",")
                );
            }
            CompleteShape::PerBatch => {}
        }
        message.push_str(then);
        conn.execute(&message).await
    }

    pub async fn fail(&self, conn: &mut Conn, id: i64, error: &str) -> sqlx::Result<FailOutcome> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::fail(self, c, id, error).await,
        };
        let status: JobStatus = sqlx::query_scalar(AssertSqlSafe(self.variant.sql.fail.as_str()))
            .bind(id)
            .bind(error)
            .bind(self.backoff.base)
            .bind(self.backoff.factor)
            .bind(self.backoff.cap)
            .bind(match self.backoff.jitter {
                Jitter::None => 1.0,
                Jitter::Equal => 0.5,
                Jitter::Full => 0.0,
            })
            .fetch_one(&mut *conn)
            .await?;
        Ok(if status == JobStatus::DeadLetter {
            FailOutcome::DeadLettered
        } else {
            FailOutcome::Retry
        })
    }

    /// The stale-job reaper: puts jobs processing for longer than `stale_after` back to
    /// `pending` (with `count_as_attempt`, as a failed attempt that can dead-letter them);
    /// returns the reaped jobs and whether each was dead-lettered.
    pub async fn reap(
        &self,
        conn: &mut Conn,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> sqlx::Result<Vec<(i64, bool)>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::reap(self, c, stale_after, count_as_attempt).await,
        };
        let sql = if count_as_attempt {
            &self.variant.sql.reap_counting
        } else {
            &self.variant.sql.reap
        };
        let rows: Vec<(i64, JobStatus)> = sqlx::query_as(AssertSqlSafe(sql.as_str()))
            .bind(stale_after)
            .fetch_all(&mut *conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, status)| (id, status == JobStatus::DeadLetter))
            .collect())
    }

    /// Jobs by status: (status, count).
    pub async fn status_counts(&self, conn: &mut Conn) -> sqlx::Result<Vec<(String, i64)>> {
        let sql = AssertSqlSafe(self.variant.sql.status_counts.as_str());
        match conn {
            Conn::Postgres(c) => sqlx::query_as(sql).fetch_all(c).await,
            Conn::Mariadb(c) => sqlx::query_as(sql).fetch_all(c).await,
        }
    }

    /// Jobs waiting in `pending` (ready or backing off).
    pub async fn pending_count(&self, conn: &mut Conn) -> sqlx::Result<i64> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::pending_count(self, c).await,
        };
        sqlx::query_scalar(AssertSqlSafe(self.variant.sql.pending_count.as_str()))
            .fetch_one(&mut *conn)
            .await
    }

    /// Table side of the accounting proof: the jobs whose row is missing, unfinished, or in
    /// another final state than `expected` (parallel to `ids`).
    pub async fn table_mismatches(
        &self,
        conn: &mut Conn,
        ids: &[i64],
        expected: &[&str],
    ) -> sqlx::Result<Vec<TableMismatch>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::table_mismatches(self, c, ids, expected).await,
        };
        let rows = sqlx::query(AssertSqlSafe(self.variant.sql.ledger_check.as_str()))
            .bind(ids)
            .bind(expected)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(TableMismatch {
                    id: r.try_get("id")?,
                    table_status: r.try_get("status")?,
                    expected: r.try_get("expected")?,
                })
            })
            .collect()
    }

    /// Rows with ids in `[from, to)` that are not among `known` (the harness never saw
    /// them committed): (id, status). The variant's statement is wrapped in the range, which
    /// PostgreSQL pushes down into it, so each chunk of the proof reads only its stretch.
    pub async fn untracked_between(
        &self,
        conn: &mut Conn,
        known: &[i64],
        from: i64,
        to: i64,
    ) -> sqlx::Result<Vec<(i64, String)>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::untracked_between(self, c, known, from, to).await,
        };
        let inner = self.variant.sql.untracked.trim().trim_end_matches(';');
        let sql = format!(
            "SELECT u.id, u.status FROM (\n{inner}\n) AS u WHERE u.id >= $2 AND u.id < $3 ORDER BY u.id"
        );
        sqlx::query_as(AssertSqlSafe(sql))
            .bind(known)
            .bind(from)
            .bind(to)
            .fetch_all(&mut *conn)
            .await
    }

    /// Jobs the completion audit saw finish as `done` more than once: (id, completions).
    pub async fn audited_duplicates(&self, conn: &mut Conn) -> sqlx::Result<Vec<(i64, i64)>> {
        let conn = match conn {
            Conn::Postgres(c) => c,
            Conn::Mariadb(c) => return mariadb::audited_duplicates(c).await,
        };
        sqlx::query_as(AUDIT_DUPLICATES).fetch_all(&mut *conn).await
    }
}

/// The connection of a step that only PostgreSQL has (the plan refuses it on MariaDB).
fn postgres_only<'a>(
    conn: &'a mut Conn,
    what: &str,
) -> sqlx::Result<&'a mut sqlx::postgres::PgConnection> {
    let engine = conn.engine();
    conn.postgres().ok_or_else(|| {
        sqlx::Error::Protocol(format!("{what} is not available on {}", engine.label()))
    })
}

/// A database error's message alone, on one line (for messages naming a variant's file).
pub fn one_line(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    }
    .lines()
    .next()
    .unwrap_or_default()
    .to_string()
}
