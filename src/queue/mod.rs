//! The queue under test: one variant's schema and statements, bound in one place.
//!
//! Each variant is a set of `.sql` files (schema in `migrations/<variant>/`, statements in
//! `src/queue/<variant>/`) collected in a [`VariantSql`]. Fleets, the sampler and the
//! accounting proof only call [`Queue`] methods, so a new variant (another index, batch
//! claims, delete-on-complete, LISTEN/NOTIFY wake-ups, a user's SQL) slots in beside `seed`
//! without touching them. Values are always bound parameters.

mod stats;

pub use stats::{ClaimProbe, DbSample};

use crate::scenario::{BackoffPlan, Jitter, QueuePlan, VariantName};
use serde::Deserialize;
use sqlx::postgres::PgConnection;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Row};
use std::time::Duration;

/// The statements of one queue design.
pub struct VariantSql {
    pub name: &'static str,
    /// DDL creating the table and indexes (run once per run schema).
    pub schema: &'static str,
    pub enqueue: &'static str,
    pub prefill: &'static str,
    pub claim: &'static str,
    pub complete: &'static str,
    pub fail: &'static str,
    pub pending_count: &'static str,
    pub reap: &'static str,
    pub reap_counting: &'static str,
    pub ledger_check: &'static str,
    pub untracked: &'static str,
    pub job_status: &'static str,
}

/// The seed article's design, verbatim.
pub const SEED: VariantSql = VariantSql {
    name: "seed",
    schema: include_str!("../../migrations/seed/0001_job_queue.sql"),
    enqueue: include_str!("seed/enqueue.sql"),
    prefill: include_str!("seed/prefill.sql"),
    claim: include_str!("seed/claim.sql"),
    complete: include_str!("seed/complete.sql"),
    fail: include_str!("seed/fail.sql"),
    pending_count: include_str!("seed/pending_count.sql"),
    reap: include_str!("seed/reap.sql"),
    reap_counting: include_str!("seed/reap_counting.sql"),
    ledger_check: include_str!("seed/ledger_check.sql"),
    untracked: include_str!("seed/untracked.sql"),
    job_status: include_str!("seed/job_status.sql"),
};

const COMPLETION_AUDIT: &str = include_str!("../../migrations/harness/0001_completion_audit.sql");
const AUDIT_DUPLICATES: &str = include_str!("audit_duplicates.sql");
const OUTBOX_SCHEMA: &str = include_str!("../../migrations/outbox/0001_orders.sql");
const OUTBOX_ORDERS: &str = include_str!("outbox_orders.sql");
const OUTBOX_PAY: &str = include_str!("outbox_pay.sql");
const OUTBOX_CHECK: &str = include_str!("outbox_check.sql");
const OUTBOX_PAID: &str = include_str!("outbox_paid.sql");
const JOBS_BY_KEY: &str = include_str!("jobs_by_key.sql");
const TABLE_STATS: &str = include_str!("table_stats.sql");

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

/// One variant's SQL plus the scenario values bound into it.
#[derive(Clone, Copy)]
pub struct Queue {
    sql: &'static VariantSql,
    backoff: BackoffPlan,
    max_retries: i32,
}

impl Queue {
    pub fn new(plan: &QueuePlan) -> Queue {
        let sql = match plan.variant {
            VariantName::Seed => &SEED,
        };
        Queue {
            sql,
            backoff: plan.backoff,
            max_retries: plan.max_retries,
        }
    }

    pub fn variant(&self) -> &'static str {
        self.sql.name
    }

    /// The claim statement's text, for reports.
    pub fn claim_sql(&self) -> &'static str {
        self.sql.claim
    }

    /// Creates the variant's table (and the completion audit when asked) in the schema the
    /// connection's `search_path` points at.
    pub async fn install(
        &self,
        conn: &mut PgConnection,
        completion_audit: bool,
    ) -> sqlx::Result<()> {
        sqlx::raw_sql(self.sql.schema).execute(&mut *conn).await?;
        if completion_audit {
            sqlx::raw_sql(COMPLETION_AUDIT).execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// Creates the outbox's `orders` table with `orders` unpaid rows.
    pub async fn install_outbox(&self, conn: &mut PgConnection, orders: u64) -> sqlx::Result<()> {
        sqlx::raw_sql(OUTBOX_SCHEMA).execute(&mut *conn).await?;
        sqlx::query(OUTBOX_ORDERS)
            .bind(orders as i64)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// The outbox's business update (inside the enqueue transaction).
    pub async fn pay_order(&self, conn: &mut PgConnection, order: i64) -> sqlx::Result<u64> {
        Ok(sqlx::query(OUTBOX_PAY)
            .bind(order)
            .execute(&mut *conn)
            .await?
            .rows_affected())
    }

    /// Orders that break the outbox promise: (order id, status, jobs).
    pub async fn outbox_problems(
        &self,
        conn: &mut PgConnection,
    ) -> sqlx::Result<Vec<(i64, String, i64)>> {
        sqlx::query_as(OUTBOX_CHECK).fetch_all(&mut *conn).await
    }

    /// Orders whose business transaction committed.
    pub async fn paid_orders(&self, conn: &mut PgConnection) -> sqlx::Result<i64> {
        sqlx::query_scalar(OUTBOX_PAID).fetch_one(&mut *conn).await
    }

    /// Current status of the given jobs: (id, status); missing jobs are left out.
    pub async fn job_statuses(
        &self,
        conn: &mut PgConnection,
        ids: &[i64],
    ) -> sqlx::Result<Vec<(i64, String)>> {
        sqlx::query_as(self.sql.job_status)
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
    }

    /// Jobs whose payload key is one of `keys`: (id, key).
    pub async fn jobs_by_key(
        &self,
        conn: &mut PgConnection,
        keys: &[String],
    ) -> sqlx::Result<Vec<(i64, String)>> {
        sqlx::query_as(JOBS_BY_KEY)
            .bind(keys)
            .fetch_all(&mut *conn)
            .await
    }

    /// Tuple counts and sizes of the queue table.
    pub async fn table_stats(&self, conn: &mut PgConnection) -> sqlx::Result<TableStats> {
        let (live_tuples, dead_tuples, table_bytes, total_bytes) =
            sqlx::query_as(TABLE_STATS).fetch_one(&mut *conn).await?;
        Ok(TableStats {
            live_tuples,
            dead_tuples,
            table_bytes,
            total_bytes,
        })
    }

    /// `VACUUM job_queue` (outside any transaction).
    pub async fn vacuum(&self, conn: &mut PgConnection) -> sqlx::Result<()> {
        sqlx::raw_sql("VACUUM job_queue")
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Refreshes planner statistics. Run after creating and prefilling the table and before
    /// workers prepare their statements: a claim planned on an empty table keeps a
    /// sequential scan until autoanalyze replaces it.
    pub async fn analyze(&self, conn: &mut PgConnection) -> sqlx::Result<()> {
        sqlx::raw_sql("ANALYZE job_queue")
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// `EXPLAIN` of the claim statement (planned, not executed), one line per plan node.
    pub async fn explain_claim(&self, conn: &mut PgConnection) -> sqlx::Result<Vec<String>> {
        // The claim text is a compile-time constant of this module, not user input.
        let rows = sqlx::query(AssertSqlSafe(format!("EXPLAIN {}", self.sql.claim)))
            .persistent(false)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(|r| r.try_get::<String, _>(0)).collect()
    }

    pub async fn enqueue(&self, conn: &mut PgConnection, job: &NewJob) -> sqlx::Result<i64> {
        sqlx::query_scalar(self.sql.enqueue)
            .bind(&job.job_type)
            .bind(&job.payload)
            .bind(job.priority)
            .bind(self.max_retries)
            .fetch_one(&mut *conn)
            .await
    }

    /// Inserts many jobs in one statement; returns their ids.
    pub async fn enqueue_batch(
        &self,
        conn: &mut PgConnection,
        jobs: &[NewJob],
    ) -> sqlx::Result<Vec<i64>> {
        let types: Vec<&str> = jobs.iter().map(|j| j.job_type.as_str()).collect();
        let payloads: Vec<&str> = jobs.iter().map(|j| j.payload.as_str()).collect();
        let priorities: Vec<i32> = jobs.iter().map(|j| j.priority).collect();
        sqlx::query_scalar(self.sql.prefill)
            .bind(types)
            .bind(payloads)
            .bind(priorities)
            .bind(self.max_retries)
            .fetch_all(&mut *conn)
            .await
    }

    /// Runs the claim statement; `None` when no job is ready.
    pub async fn claim(&self, conn: &mut PgConnection) -> sqlx::Result<Option<ClaimedJob>> {
        let row = sqlx::query(self.sql.claim)
            .fetch_optional(&mut *conn)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let payload: Json<JobPayload> = row
            .try_get("payload")
            .unwrap_or(Json(JobPayload::default()));
        Ok(Some(ClaimedJob {
            id: row.try_get("id")?,
            job_type: row.try_get("type")?,
            payload: payload.0,
        }))
    }

    pub async fn complete(&self, conn: &mut PgConnection, id: i64) -> sqlx::Result<()> {
        sqlx::query(self.sql.complete)
            .bind(id)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    pub async fn fail(
        &self,
        conn: &mut PgConnection,
        id: i64,
        error: &str,
    ) -> sqlx::Result<FailOutcome> {
        let status: String = sqlx::query_scalar(self.sql.fail)
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
        Ok(if status == "dead_letter" {
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
        conn: &mut PgConnection,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> sqlx::Result<Vec<(i64, bool)>> {
        let sql = if count_as_attempt {
            self.sql.reap_counting
        } else {
            self.sql.reap
        };
        let rows: Vec<(i64, String)> = sqlx::query_as(sql)
            .bind(stale_after)
            .fetch_all(&mut *conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, status)| (id, status == "dead_letter"))
            .collect())
    }

    /// Jobs waiting in `pending` (ready or backing off).
    pub async fn pending_count(&self, conn: &mut PgConnection) -> sqlx::Result<i64> {
        sqlx::query_scalar(self.sql.pending_count)
            .fetch_one(&mut *conn)
            .await
    }

    /// Table side of the accounting proof: the jobs whose row is missing, unfinished, or in
    /// another final state than `expected` (parallel to `ids`).
    pub async fn table_mismatches(
        &self,
        conn: &mut PgConnection,
        ids: &[i64],
        expected: &[&str],
    ) -> sqlx::Result<Vec<TableMismatch>> {
        let rows = sqlx::query(self.sql.ledger_check)
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

    /// Rows the harness never saw committed: (id, status).
    pub async fn untracked(
        &self,
        conn: &mut PgConnection,
        ids: &[i64],
    ) -> sqlx::Result<Vec<(i64, String)>> {
        sqlx::query_as(self.sql.untracked)
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
    }

    /// Jobs the completion audit saw finish as `done` more than once: (id, completions).
    pub async fn audited_duplicates(
        &self,
        conn: &mut PgConnection,
    ) -> sqlx::Result<Vec<(i64, i64)>> {
        sqlx::query_as(AUDIT_DUPLICATES).fetch_all(&mut *conn).await
    }
}
