//! What the two SQL engines read alike on a connection, over sqlx's connection of either:
//! the sample's job counts, the proof's mismatches read through the design's words, the
//! completion audit, and a statement run once in a transaction that is rolled back (the
//! claim's probe). Each engine's `inspect.rs` keeps what it reads differently.

use super::count_statuses;
use super::design::SqlDesign;
use crate::backend::error::BackendError;
use crate::backend::figures::DbSample;
use crate::backend::job::{JobId, TableMismatch};
use sqlx::database::HasStatementCache;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, ColumnIndex, Database, Decode, Executor, IntoArguments, Row, Type};

/// Jobs by status into `s` (`full`: the design's status_counts.sql, a scan of the table),
/// or only the waiting ones (its pending_count.sql). The count of waiting jobs is planned
/// afresh each time (not prepared): a plan kept from a nearly empty table would scan the
/// whole table every second instead of the pending index.
pub async fn statuses_into<DB>(
    conn: &mut DB::Connection,
    d: &SqlDesign,
    full: bool,
    s: &mut DbSample,
) -> Result<(), BackendError>
where
    DB: Database + HasStatementCache,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    if full {
        let counts = status_counts::<DB>(conn, d).await?;
        return count_statuses(d, counts, s);
    }
    let pending = AssertSqlSafe(d.sql.pending_count.as_str());
    let query = sqlx::query_scalar::<DB, i64>(pending).persistent(false);
    s.pending = query.fetch_one(conn).await?;
    Ok(())
}

/// The design's status_counts.sql: `(word, jobs)` rows.
pub async fn status_counts<DB>(
    conn: &mut DB::Connection,
    d: &SqlDesign,
) -> Result<Vec<(String, i64)>, BackendError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    let sql = AssertSqlSafe(d.sql.status_counts.as_str());
    Ok(sqlx::query_as::<DB, (String, i64)>(sql)
        .fetch_all(conn)
        .await?)
}

/// The rows of the design's ledger_check.sql (`id`, `status`, `expected`), the table's
/// words read as the harness's (`missing` kept: a job the table does not hold).
pub fn mismatches<R>(d: &SqlDesign, rows: &[R]) -> Result<Vec<TableMismatch>, BackendError>
where
    R: Row,
    for<'a> &'a str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let mismatch = |r: &R| {
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
    };
    rows.iter().map(mismatch).collect()
}

/// The completion audit's `(id, completions)` rows of jobs `from..to` (`sql`: the engine's
/// audited_completions.sql, binding the range's ends in that order).
pub async fn audited_completions<DB>(
    conn: &mut DB::Connection,
    sql: &'static str,
    from: JobId,
    to: JobId,
) -> Result<Vec<(JobId, i64)>, BackendError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    let query = sqlx::query_as::<DB, (JobId, i64)>(sql).bind(from).bind(to);
    Ok(query.fetch_all(conn).await?)
}

/// The one row of `query`, run inside a transaction that is then rolled back: a locking
/// statement's real cost right now, without keeping what it locked or changed.
pub async fn rolled_back<'q, DB>(
    conn: &mut DB::Connection,
    query: Query<'q, DB, DB::Arguments>,
) -> Result<DB::Row, BackendError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
{
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
    let row = query.fetch_one(&mut *conn).await;
    sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await?;
    Ok(row?)
}
