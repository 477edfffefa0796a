//! A PostgreSQL connection of the run: what producers and workers do on it. Values are
//! always bound parameters (the pipelined completion binds them to a prepared statement's
//! `$1`; see [`PgLink::complete_then`]).

use crate::backend::error::BackendError;
use crate::backend::job::{ClaimedJob, FailOutcome, Handout, JobId, JobPayload, JobStatus, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam::{Enqueue, WakeUp, Work};
use crate::backend::sql::Shared;
use crate::backend::sql::completion::{self, Completion};
use crate::backend::sql::design::{CompleteShape, SqlDesign};
use crate::named_params::{ClaimParam, FailParam};
use async_trait::async_trait;
use sqlx::postgres::PgConnection;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, Executor, Row};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

const OUTBOX_PAY: &str = include_str!("outbox_pay.sql");

/// The session's name for the design's success update, prepared once per worker connection
/// so that the completion can share a message with `COMMIT`.
const PREPARED_COMPLETION: &str = "dbq_complete";

/// How often a busy worker commits without the next `BEGIN`. PostgreSQL reports a session's
/// table and transaction counts (`pg_stat_*`, which autovacuum reads to decide when to
/// vacuum, and the sampler's dead tuples and commits) only while it waits outside a
/// transaction, at most once a second. A worker always inside its next `BEGIN` would hide
/// its updates from autovacuum until it disconnected; the seed's worker, which commits and
/// then claims, rests between jobs. One extra round trip a second keeps the counts as fresh.
const STATS_REPORT_EVERY: Duration = Duration::from_secs(1);

/// The worker's transaction on its connection, in two round trips a job against pgbench's
/// four (`BEGIN; claim; complete; COMMIT;`, each awaited): the claim is one; the completion,
/// the `COMMIT` and the next job's `BEGIN` travel as one message
/// (`EXECUTE dbq_complete(42); COMMIT; BEGIN`), so the next step starts inside its
/// transaction. The server runs the seed's statements in the seed's order; the one
/// difference is that `NOW()` in the next claim reads that `BEGIN`'s time, microseconds
/// before the claim on a busy worker. An idle worker (an empty claim) commits alone and
/// begins afresh, and so does a busy one once every [`STATS_REPORT_EVERY`]. Failure
/// updates, which carry text, are sent on their own.
#[derive(Default)]
struct Transaction {
    /// A `BEGIN` already ran on the connection.
    open: bool,
    /// The completion is prepared on the connection.
    prepared: bool,
    /// When the session last waited outside a transaction (`None`: not yet).
    rested_at: Option<Instant>,
}

/// One connection.
pub struct PgLink {
    pub(super) conn: PgConnection,
    pub(super) shared: Arc<Shared>,
    tx: Transaction,
}

impl PgLink {
    pub(super) fn new(conn: PgConnection, shared: Arc<Shared>) -> PgLink {
        PgLink {
            conn,
            shared,
            tx: Transaction::default(),
        }
    }

    /// Runs statements that take no parameters and return nothing, as one simple query.
    pub(super) async fn execute(&mut self, sql: &str) -> sqlx::Result<()> {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut self.conn)
            .await
            .map(drop)
    }

    pub(super) async fn insert(&mut self, job: &NewJob) -> sqlx::Result<JobId> {
        let query = sqlx::query_scalar(AssertSqlSafe(self.shared.design.sql.enqueue.as_str()))
            .bind(&job.job_type)
            .bind(&job.payload)
            .bind(self.shared.design.priority(job.priority))
            .bind(self.shared.max_retries);
        // The notify design's insert names the run's channel; a custom design notifies its
        // own.
        match self.shared.design.wake_up {
            WakeUp::Notify if self.shared.design.channel.is_none() => {
                query
                    .bind(&self.shared.namespace)
                    .fetch_one(&mut self.conn)
                    .await
            }
            WakeUp::Notify | WakeUp::Poll => query.fetch_one(&mut self.conn).await,
        }
    }

    /// Runs the claim statement (in whatever transaction is open).
    pub(super) async fn claim_rows(&mut self) -> sqlx::Result<Vec<ClaimedJob>> {
        let d = &self.shared.design;
        let query = bind_claim(d, sqlx::query(AssertSqlSafe(d.sql.claim.as_str())));
        let rows = query.fetch_all(&mut self.conn).await?;
        let Some(first) = rows.first() else {
            return Ok(Vec::new());
        };
        let columns = ClaimColumns::of(first);
        rows.iter()
            .map(|row| {
                Ok(ClaimedJob {
                    id: row.try_get("id")?,
                    job_type: row.try_get("type")?,
                    payload: columns.payload(row)?,
                    handout: Handout::redelivered_if(
                        columns.redelivered && row.try_get("redelivered")?,
                    ),
                })
            })
            .collect()
    }

    /// Finishes `ids` as done: one statement per job, or one for all of them; the ids whose
    /// completion finished nothing ([`completion::stale`]).
    async fn complete(&mut self, ids: &[JobId]) -> Result<Vec<JobId>, BackendError> {
        let d = &self.shared.design;
        let sql = d.sql.complete.as_str();
        let mut results = Vec::new();
        match d.complete {
            CompleteShape::PerBatch => {
                let query = sqlx::query(AssertSqlSafe(sql)).bind(ids);
                results = read_completions((&mut self.conn).fetch_many(query)).await?;
            }
            CompleteShape::PerJob => {
                for id in ids {
                    let query = sqlx::query(AssertSqlSafe(sql)).bind(id);
                    results.extend(read_completions((&mut self.conn).fetch_many(query)).await?);
                }
            }
        }
        completion::stale(d.complete, ids, &results)
    }

    /// Prepares the success update under [`PREPARED_COMPLETION`], `$1` typed as
    /// [`PgLink::complete`] binds it.
    async fn prepare_completion(&mut self) -> sqlx::Result<()> {
        let id_type = match self.shared.design.complete {
            CompleteShape::PerJob => "bigint",
            CompleteShape::PerBatch => "bigint[]",
        };
        let complete = self
            .shared
            .design
            .sql
            .complete
            .trim_end()
            .trim_end_matches(';');
        let prepare = format!("PREPARE {PREPARED_COMPLETION} ({id_type}) AS\n{complete}");
        self.execute(&prepare).await
    }

    /// Finishes `ids` as done, then runs `then` (e.g. `COMMIT; BEGIN`), in one round trip:
    /// the simple-query message `EXECUTE dbq_complete(42); COMMIT; BEGIN`, whose statements
    /// the server runs in order and stops at the first error, as if each had been sent
    /// alone. The server runs the design's own statement, planned once per session; the ids
    /// are bound to its `$1`, written as the decimal integers the claim returned (no other
    /// value travels this way).
    async fn complete_then(
        &mut self,
        ids: &[JobId],
        then: &str,
    ) -> Result<Vec<JobId>, BackendError> {
        let mut message = String::with_capacity(32 + 24 * ids.len() + then.len());
        match self.shared.design.complete {
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
        let results = sqlx::raw_sql(AssertSqlSafe(message)).fetch_many(&mut self.conn);
        let results = read_completions(results).await?;
        completion::stale(self.shared.design.complete, ids, &results)
    }

    async fn begin(&mut self) -> sqlx::Result<()> {
        if !self.tx.prepared {
            self.prepare_completion().await?;
            self.tx.prepared = true;
        }
        if !self.tx.open {
            self.execute("BEGIN").await?;
            self.tx.open = true;
        }
        Ok(())
    }

    async fn commit(&mut self) -> sqlx::Result<()> {
        self.tx.open = false;
        self.execute("COMMIT").await?;
        self.tx.rested_at = Some(Instant::now());
        Ok(())
    }

    /// Completes `done`, commits, and begins the next transaction, in one round trip; once
    /// every [`STATS_REPORT_EVERY`] without the `BEGIN`, so that the session rests.
    async fn complete_commit_and_begin(
        &mut self,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        self.tx.open = false;
        let rest = self
            .tx
            .rested_at
            .is_none_or(|at| at.elapsed() >= STATS_REPORT_EVERY);
        let stale = if rest {
            let stale = self.complete_then(done, "COMMIT").await?;
            self.tx.rested_at = Some(Instant::now());
            stale
        } else {
            let stale = self.complete_then(done, "COMMIT; BEGIN").await?;
            self.tx.open = true;
            stale
        };
        Ok(stale)
    }

    /// The outbox's business update (inside the enqueue transaction).
    pub(super) async fn pay_order(&mut self, order: i64) -> sqlx::Result<u64> {
        Ok(sqlx::query(OUTBOX_PAY)
            .bind(order)
            .execute(&mut self.conn)
            .await?
            .rows_affected())
    }

    pub(super) async fn outbox_insert(&mut self, job: &NewJob, order: i64) -> sqlx::Result<JobId> {
        if self.pay_order(order).await? != 1 {
            return Err(sqlx::Error::RowNotFound);
        }
        self.insert(job).await
    }
}

#[async_trait]
impl Enqueue for PgLink {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        Ok(self.insert(job).await?)
    }

    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let types: Vec<&str> = jobs.iter().map(|j| j.job_type.as_str()).collect();
        let payloads: Vec<&str> = jobs.iter().map(|j| j.payload.as_str()).collect();
        let d = &self.shared.design;
        let priorities: Vec<i32> = jobs.iter().map(|j| d.priority(j.priority)).collect();
        Ok(
            sqlx::query_scalar(AssertSqlSafe(self.shared.design.sql.prefill.as_str()))
                .bind(types)
                .bind(payloads)
                .bind(priorities)
                .bind(self.shared.max_retries)
                .fetch_all(&mut self.conn)
                .await?,
        )
    }
}

#[async_trait]
impl Work for PgLink {
    async fn claim(&mut self, mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        if mode == ClaimMode::InTransaction {
            self.begin().await?;
        }
        // Committed: the claim is one statement, which commits by itself.
        Ok(self.claim_rows().await?)
    }

    async fn idle(&mut self, mode: ClaimMode) -> Result<(), BackendError> {
        if mode == ClaimMode::InTransaction {
            self.commit().await?;
        }
        Ok(())
    }

    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError> {
        let b = self.shared.backoff;
        let mut query = sqlx::query_scalar(AssertSqlSafe(self.shared.design.sql.fail.as_str()));
        for param in &self.shared.design.fail_binds {
            query = match param {
                FailParam::Id => query.bind(id),
                FailParam::Error => query.bind(error),
                FailParam::BackoffBase => query.bind(b.base),
                FailParam::BackoffFactor => query.bind(b.factor),
                FailParam::BackoffCap => query.bind(b.cap),
                FailParam::BackoffJitter => query.bind(b.jitter.floor()),
            };
        }
        // A guarded failure update that finds the job no longer this worker's returns no row.
        let word: Option<String> = query.fetch_optional(&mut self.conn).await?;
        let Some(word) = word else {
            return Ok(FailOutcome::Stale);
        };
        Ok(match self.shared.design.status("fail.sql", &word)? {
            JobStatus::DeadLetter => FailOutcome::DeadLettered,
            _ => FailOutcome::Retry,
        })
    }

    async fn finish(
        &mut self,
        mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        match mode {
            ClaimMode::InTransaction => self.complete_commit_and_begin(done).await,
            ClaimMode::Committed if !done.is_empty() => self.complete(done).await,
            ClaimMode::Committed => Ok(Vec::new()),
        }
    }

    async fn recover(&mut self, mode: ClaimMode) -> bool {
        self.tx.open = false;
        // A ROLLBACK outside a transaction is only a warning; committed mode has none open.
        mode == ClaimMode::Committed || self.execute("ROLLBACK").await.is_ok()
    }

    async fn reap(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        let sql = match count_as_attempt {
            true => &self.shared.design.sql.reap_counting,
            false => &self.shared.design.sql.reap,
        };
        let Some(sql) = sql else {
            return Ok(Vec::new());
        };
        let b = self.shared.backoff;
        let query = sqlx::query_as(AssertSqlSafe(sql.as_str())).bind(stale_after);
        // A named reap.sql may give a rescued job its back-off: the values after the
        // threshold, in ReapParam's order, as far as it takes them.
        let query = match self.shared.design.reap_values {
            1 => query,
            _ => query
                .bind(b.base)
                .bind(b.factor)
                .bind(b.cap)
                .bind(b.jitter.floor()),
        };
        let rows: Vec<(i64, String)> = query.fetch_all(&mut self.conn).await?;
        let file = match count_as_attempt {
            true => "reap_counting.sql",
            false => "reap.sql",
        };
        Ok(self
            .shared
            .design
            .statuses(file, rows)?
            .into_iter()
            .map(|(id, status)| (id, status == JobStatus::DeadLetter))
            .collect())
    }

    async fn tick(&mut self) -> Result<(), BackendError> {
        let d = &self.shared.design;
        if let Some(sql) = &d.sql.tick {
            let query = sqlx::query(AssertSqlSafe(sql.as_str()));
            let query = match d.rotation_period {
                Some(period) => query.bind(period),
                None => query,
            };
            query.execute(&mut self.conn).await?;
        }
        Ok(())
    }
}

/// What each completion statement of a message did; a returned `id` names a job it finished.
async fn read_completions(
    results: futures_util::stream::BoxStream<
        '_,
        sqlx::Result<sqlx::Either<sqlx::postgres::PgQueryResult, sqlx::postgres::PgRow>>,
    >,
) -> sqlx::Result<Vec<Completion>> {
    completion::read(
        results,
        |r| r.rows_affected(),
        |row| row.try_get::<JobId, _>("id").ok(),
    )
    .await
}

/// What a claim's rows hold besides `id` and `type`, read once per claim from its first
/// row: whether it reports redeliveries, and whether its payload is JSON text.
struct ClaimColumns {
    redelivered: bool,
    payload_is_text: bool,
}

impl ClaimColumns {
    fn of(row: &sqlx::postgres::PgRow) -> ClaimColumns {
        use sqlx::{Column, TypeInfo};
        let type_of = |name: &str| {
            let column = row.columns().iter().find(|c| c.name() == name);
            column.map(|c| c.type_info().name().to_string())
        };
        ClaimColumns {
            redelivered: type_of("redelivered").is_some(),
            payload_is_text: type_of("payload").is_some_and(|t| TEXT_TYPES.contains(&t.as_str())),
        }
    }

    /// The job's payload: JSON, or text holding JSON; never defaults (a payload that is not
    /// the harness's JSON would lose the job's stamps, so the claim fails instead).
    fn payload(&self, row: &sqlx::postgres::PgRow) -> sqlx::Result<JobPayload> {
        if !self.payload_is_text {
            let payload: Json<JobPayload> = row.try_get("payload")?;
            return Ok(payload.0);
        }
        let text: &str = row.try_get("payload")?;
        serde_json::from_str(text).map_err(|e| sqlx::Error::ColumnDecode {
            index: "payload".into(),
            source: Box::new(e),
        })
    }
}

/// Column types that may hold a payload as JSON text.
pub(super) const TEXT_TYPES: [&str; 3] = ["TEXT", "VARCHAR", "BPCHAR"];

/// Binds the claim's parameters to `query` (the claim's text, maybe `EXPLAIN`ed).
pub(super) fn bind_claim<'q>(
    d: &SqlDesign,
    mut query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
    for param in &d.claim_binds {
        query = match param {
            ClaimParam::Batch => query.bind(i64::from(d.claim_size())),
            ClaimParam::VisibilityTimeout => query.bind(d.visibility_timeout),
        };
    }
    query
}

