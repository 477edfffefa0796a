//! What a SQL engine's link does alike, written once over [`SqlLink`]: the proof's
//! questions to the table, the planner's statistics, the claim's plan and its probe (run
//! once in a transaction rolled back), and the completion audit. An engine's link says only
//! its dialect: its statements' prefixes, how a statement binds a list and the claim its
//! values, how its server reports a plan, and its own sample of the server.

use super::Shared;
use super::bystander::{self, BystanderSql};
use super::design::SqlDesign;
use super::inspect;
use crate::backend::error::BackendError;
use crate::backend::figures::{ClaimProbe, DbSample, TableStats};
use crate::backend::job::{JobId, JobStatus, TableMismatch};
use crate::backend::link::{
    Audit, Bystand, Connection, Enqueue, Inspect, Link, Mvcc, Outbox, Planner, Readers,
    SessionStates, Sessions, Vacuum, Work,
};
use async_trait::async_trait;
use sqlx::Connection as _;
use sqlx::database::HasStatementCache;
use sqlx::query::Query;
use sqlx::{
    AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};
use std::future::Future;

/// A query of engine `DB`, its arguments bound.
pub type SqlQuery<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

/// A connection of a SQL engine, as the shared code reaches it: it offers, beyond the
/// roles every link has, the bystander, the planner, session ending, a held horizon and
/// the completion audit; what only one engine offers, it names (`own_…`).
pub trait SqlLink: Enqueue + Work + Sessions + Mvcc + Send + Sized + 'static {
    /// sqlx's driver for the engine.
    type Db: Database + HasStatementCache;

    /// The bystander's statements, in the engine's dialect.
    const BYSTANDER: BystanderSql;
    /// The statement that reads the completion audit's `(id, completions)` of a range of ids.
    const AUDITED_COMPLETIONS: &'static str;
    /// The statement that refreshes a table's statistics, before the table's name.
    const ANALYZE: &'static str;
    /// What runs the claim once and reports its plan and cost, before the claim.
    const PROBE: &'static str;

    /// The connection, and what the run's connections share.
    fn parts(&mut self) -> (&mut <Self::Db as Database>::Connection, &Shared);

    /// The connection, to hang up.
    fn into_conn(self) -> <Self::Db as Database>::Connection;

    /// The transactional outbox, where this engine's link offers it.
    fn own_outbox(&mut self) -> Option<&mut dyn Outbox> {
        None
    }
    /// The server's view of a session, where offered.
    fn own_session_states(&mut self) -> Option<&mut dyn SessionStates> {
        None
    }
    /// Per-table cleanup, where offered.
    fn own_vacuum(&mut self) -> Option<&mut dyn Vacuum> {
        None
    }
    /// Long snapshot readers, where offered.
    fn own_readers(&mut self) -> Option<&mut dyn Readers> {
        None
    }

    /// Binds the claim's values to `query` (the claim, maybe `EXPLAIN`ed), in the engine's
    /// types.
    fn bind_claim<'q>(d: &SqlDesign, query: SqlQuery<'q, Self::Db>) -> SqlQuery<'q, Self::Db>;

    /// `query` with a list of ids bound as the engine's statements take one (an array, a
    /// JSON array).
    fn bind_ids<'q>(query: SqlQuery<'q, Self::Db>, ids: &'q [JobId]) -> SqlQuery<'q, Self::Db>;

    /// `query` with the proof's keys bound as one list.
    fn bind_keys<'q>(query: SqlQuery<'q, Self::Db>, keys: &'q [String]) -> SqlQuery<'q, Self::Db>;

    /// `query` (ledger_check.sql) with the ids and the ledger's expected words bound.
    fn bind_expected<'q>(
        query: SqlQuery<'q, Self::Db>,
        ids: &'q [JobId],
        expected: &'q [&'q str],
    ) -> SqlQuery<'q, Self::Db>;

    /// The design's untracked.sql over ids `[from, to)`, `known` (the ledger's) bound.
    fn untracked<'q>(
        d: &SqlDesign,
        known: &'q [JobId],
        from: JobId,
        to: JobId,
    ) -> SqlQuery<'q, Self::Db>;

    /// A sample of the queue and the server (Inspect::sample).
    fn sample(&mut self, full: bool)
    -> impl Future<Output = Result<DbSample, BackendError>> + Send;

    /// The table's size (Inspect::table_stats).
    fn table_stats(&mut self) -> impl Future<Output = Result<TableStats, BackendError>> + Send;

    /// One row of the claim's `EXPLAIN` as a line.
    fn explain_line(row: &<Self::Db as Database>::Row) -> sqlx::Result<String>;

    /// The probe's one row, read.
    fn read_probe(row: &<Self::Db as Database>::Row) -> Result<ClaimProbe, BackendError>;
}

/// The bystander's steps (sql/bystander.rs) on the link's connection.
#[async_trait]
impl<L: SqlLink> Bystand for L
where
    for<'c> &'c mut <L::Db as Database>::Connection: Executor<'c, Database = L::Db>,
    <L::Db as Database>::Arguments: IntoArguments<L::Db>,
    for<'q> i64: Encode<'q, L::Db> + Type<L::Db>,
{
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        let (conn, _) = self.parts();
        Ok(bystander::install::<L::Db>(conn, &L::BYSTANDER, rows).await?)
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        let (conn, _) = self.parts();
        Ok(bystander::touch::<L::Db>(conn, &L::BYSTANDER, true, id).await?)
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        let (conn, _) = self.parts();
        Ok(bystander::touch::<L::Db>(conn, &L::BYSTANDER, false, id).await?)
    }
}

#[async_trait]
impl<L: SqlLink> Connection for L {
    async fn close(self: Box<Self>) {
        (*self).into_conn().close().await.ok();
    }
}

impl<L: SqlLink> Link for L
where
    L: Inspect + Planner + Audit + Bystand,
{
    fn bystander(&mut self) -> Option<&mut dyn Bystand> {
        Some(self)
    }
    fn planner(&mut self) -> Option<&mut dyn Planner> {
        Some(self)
    }
    fn sessions(&mut self) -> Option<&mut dyn Sessions> {
        Some(self)
    }
    fn mvcc(&mut self) -> Option<&mut dyn Mvcc> {
        Some(self)
    }
    fn audit(&mut self) -> Option<&mut dyn Audit> {
        Some(self)
    }
    fn outbox(&mut self) -> Option<&mut dyn Outbox> {
        self.own_outbox()
    }
    fn session_states(&mut self) -> Option<&mut dyn SessionStates> {
        self.own_session_states()
    }
    fn vacuum(&mut self) -> Option<&mut dyn Vacuum> {
        self.own_vacuum()
    }
    fn readers(&mut self) -> Option<&mut dyn Readers> {
        self.own_readers()
    }
}

/// The claim's statement behind `prefix` (`EXPLAIN`, a probe), its values bound; planned
/// afresh, not prepared. The claim is the design's own file, checked when the run started.
fn claim_with<'q, L: SqlLink>(d: &SqlDesign, prefix: &str) -> SqlQuery<'q, L::Db>
where
    <L::Db as Database>::Arguments: IntoArguments<L::Db>,
{
    let text = format!("{prefix} {}", d.sql.claim);
    L::bind_claim(d, sqlx::query(AssertSqlSafe(text)).persistent(false))
}

#[async_trait]
impl<L: SqlLink> Planner for L
where
    for<'c> &'c mut <L::Db as Database>::Connection: Executor<'c, Database = L::Db>,
    <L::Db as Database>::Arguments: IntoArguments<L::Db>,
{
    async fn analyze(&mut self) -> Result<(), BackendError> {
        let (conn, shared) = self.parts();
        // The table name is the design's constant, not user input.
        let analyze = format!("{} {}", L::ANALYZE, shared.design.table);
        sqlx::raw_sql(AssertSqlSafe(analyze)).execute(conn).await?;
        Ok(())
    }

    async fn explain_claim(&mut self) -> Result<Vec<String>, BackendError> {
        let (conn, shared) = self.parts();
        let rows = claim_with::<L>(&shared.design, "EXPLAIN")
            .fetch_all(conn)
            .await?;
        Ok(rows
            .iter()
            .map(L::explain_line)
            .collect::<sqlx::Result<_>>()?)
    }

    async fn probe_claim(&mut self) -> Result<ClaimProbe, BackendError> {
        let (conn, shared) = self.parts();
        let probe = claim_with::<L>(&shared.design, L::PROBE);
        L::read_probe(&inspect::rolled_back::<L::Db>(conn, probe).await?)
    }
}

#[async_trait]
impl<L: SqlLink> Audit for L
where
    for<'c> &'c mut <L::Db as Database>::Connection: Executor<'c, Database = L::Db>,
    <L::Db as Database>::Arguments: IntoArguments<L::Db>,
    for<'q> i64: Encode<'q, L::Db> + Type<L::Db>,
    for<'r> i64: Decode<'r, L::Db>,
    usize: ColumnIndex<<L::Db as Database>::Row>,
{
    async fn audited_completions(
        &mut self,
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, i64)>, BackendError> {
        let (conn, _) = self.parts();
        let sql = L::AUDITED_COMPLETIONS;
        inspect::audited_completions::<L::Db>(conn, sql, from, to).await
    }
}

/// The proof's questions, asked alike on both engines; each binds its lists its own way.
#[async_trait]
impl<L: SqlLink> Inspect for L
where
    for<'c> &'c mut <L::Db as Database>::Connection: Executor<'c, Database = L::Db>,
    <L::Db as Database>::Arguments: IntoArguments<L::Db>,
    for<'r> i64: Decode<'r, L::Db> + Type<L::Db>,
    for<'r> i32: Decode<'r, L::Db> + Type<L::Db>,
    for<'r> String: Decode<'r, L::Db> + Type<L::Db>,
    usize: ColumnIndex<<L::Db as Database>::Row>,
    for<'a> &'a str: ColumnIndex<<L::Db as Database>::Row>,
{
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        SqlLink::sample(self, full).await
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        SqlLink::table_stats(self).await
    }

    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError> {
        let (conn, shared) = self.parts();
        inspect::status_counts::<L::Db>(conn, &shared.design).await
    }

    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        let (conn, shared) = self.parts();
        let d = &shared.design;
        let query = L::bind_ids(sqlx::query(AssertSqlSafe(d.sql.job_status.as_str())), ids);
        let status = |r: &<L::Db as Database>::Row| {
            let word: String = r.try_get(1)?;
            Ok((
                r.try_get(0)?,
                d.status("job_status.sql", &word)?,
                r.try_get(2)?,
            ))
        };
        query.fetch_all(conn).await?.iter().map(status).collect()
    }

    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        let (conn, shared) = self.parts();
        let sql = AssertSqlSafe(shared.design.sql.jobs_by_key.as_str());
        let rows = L::bind_keys(sqlx::query(sql), keys).fetch_all(conn).await?;
        id_and_word(&rows)
    }

    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError> {
        let (conn, shared) = self.parts();
        let sql = AssertSqlSafe(shared.design.sql.ledger_check.as_str());
        let query = L::bind_expected(sqlx::query(sql), ids, expected);
        inspect::mismatches(&shared.design, &query.fetch_all(conn).await?)
    }

    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let (conn, shared) = self.parts();
        let rows = L::untracked(&shared.design, known, from, to)
            .fetch_all(conn)
            .await?;
        id_and_word(&rows)
    }
}

/// `(id, word)` rows.
fn id_and_word<R: Row>(rows: &[R]) -> Result<Vec<(JobId, String)>, BackendError>
where
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    usize: ColumnIndex<R>,
{
    let pair = |r: &R| Ok((r.try_get(0)?, r.try_get(1)?));
    rows.iter().map(pair).collect()
}
