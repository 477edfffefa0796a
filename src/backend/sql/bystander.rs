//! The bystander on the SQL engines: a table of its own in the run's namespace, filled once,
//! then read and updated by primary key, each statement in its own transaction. The engines
//! differ only in their statements (each folder's `bystander/`) and in what the fill needs
//! first; the steps are these, once, over sqlx's connection of either engine.

use sqlx::{AssertSqlSafe, Database, Encode, Executor, IntoArguments, Type};

/// One engine's bystander statements.
pub struct BystanderSql {
    pub table: &'static str,
    /// Fills ids 1 to `$1`/`?`.
    pub fill: &'static str,
    pub read: &'static str,
    pub update: &'static str,
    /// Statistics for the planner once it is filled (`ANALYZE bystander`).
    pub analyze: &'static str,
    /// A session setting the fill needs for `rows` rows, where the dialect needs one.
    pub before_fill: fn(u32) -> Option<String>,
}

/// Creates the table with `rows` rows.
pub async fn install<DB>(
    conn: &mut DB::Connection,
    sql: &BystanderSql,
    rows: u32,
) -> sqlx::Result<()>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
{
    sqlx::raw_sql(sql.table).execute(&mut *conn).await?;
    if let Some(setting) = (sql.before_fill)(rows) {
        sqlx::raw_sql(AssertSqlSafe(setting))
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query::<DB>(sql.fill)
        .bind(i64::from(rows))
        .execute(&mut *conn)
        .await?;
    sqlx::raw_sql(sql.analyze).execute(&mut *conn).await?;
    Ok(())
}

/// Reads (or, `read` false, updates) the row `id`.
pub async fn touch<DB>(
    conn: &mut DB::Connection,
    sql: &BystanderSql,
    read: bool,
    id: i64,
) -> sqlx::Result<()>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
{
    let statement = if read { sql.read } else { sql.update };
    sqlx::query::<DB>(statement)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
