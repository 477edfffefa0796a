//! What the two SQL engines do alike on a server, over sqlx's connection of either: connect
//! and hang up, say what the server is, install a design's tables and check a custom design,
//! and name the server's address. Each engine's folder passes its own statements and words;
//! the dialect differences stay there.

use super::design::{SqlDesign, StateModel};
use super::one_line;
use crate::backend::error::BackendError;
use crate::backend::seam::{DesignError, InstallError, ServerFacts};
use sqlx::{
    AssertSqlSafe, ColumnIndex, Connection, Database, Decode, Executor, IntoArguments, Type,
};
use std::future::Future;

/// `scheme://user@host:port/database`, never the password.
pub fn address(scheme: &str, user: &str, host: &str, port: u16, database: &str) -> String {
    format!("{scheme}://{user}@{host}:{port}/{database}")
}

/// Connects once and hangs up.
pub async fn ping<C: Connection>(options: &C::Options) -> Result<(), BackendError> {
    let conn = C::connect_with(options).await?;
    conn.close().await.ok();
    Ok(())
}

/// The server's version (`SELECT version()`, named by `label` where the server does not name
/// itself) and the settings `settings_sql` lists as (name, value) rows.
pub async fn describe<DB>(
    conn: &mut DB::Connection,
    label: &str,
    settings_sql: &'static str,
) -> Result<ServerFacts, BackendError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    let version: String = sqlx::query_scalar::<DB, String>("SELECT version()")
        .fetch_one(&mut *conn)
        .await?;
    let rows: Vec<(String, String)> = sqlx::query_as::<DB, (String, String)>(settings_sql)
        .fetch_all(&mut *conn)
        .await?;
    Ok(ServerFacts {
        version: format!("{label}{version}"),
        settings: rows.into_iter().collect(),
    })
}

/// The harness's own tables beside a design installed with the completion audit, in the
/// engine's dialect.
pub struct AuditTables {
    pub completion_audit: &'static str,
    /// Records each status change of a design with a status column.
    pub status_trigger: &'static str,
}

/// Runs each DDL text of `ddl` in order.
async fn run_all<DB>(conn: &mut DB::Connection, ddl: &[String]) -> sqlx::Result<()>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    for text in ddl {
        sqlx::raw_sql(AssertSqlSafe(text.as_str()))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The completion audit's tables and triggers on the installed design.
async fn install_audit<DB>(
    conn: &mut DB::Connection,
    d: &SqlDesign,
    audit: &AuditTables,
) -> sqlx::Result<()>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    sqlx::raw_sql(audit.completion_audit)
        .execute(&mut *conn)
        .await?;
    match &d.sql.state {
        StateModel::StatusColumn => {
            sqlx::raw_sql(audit.status_trigger)
                .execute(&mut *conn)
                .await?;
        }
        StateModel::Declared(trigger) => {
            sqlx::raw_sql(AssertSqlSafe(trigger.as_str()))
                .execute(&mut *conn)
                .await?;
        }
        StateModel::OwnAudit => {}
    }
    run_all::<DB>(conn, &d.sql.audit).await
}

/// Whether `table` exists once the schema ran (a query of no rows, alike in both dialects).
async fn has_table<DB>(conn: &mut DB::Connection, table: &str) -> sqlx::Result<()>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    // `table` is the design's constant, not user input.
    let probe = format!("SELECT * FROM {table} WHERE 1 = 0");
    sqlx::raw_sql(AssertSqlSafe(probe))
        .execute(&mut *conn)
        .await
        .map(drop)
}

/// Installs `d` on `conn` (with the audit's tables when given): a custom design's failures
/// are blamed on its files, and its statements checked by `check` once its tables stand.
pub async fn install<'a, DB, F>(
    conn: &'a mut DB::Connection,
    d: &'a SqlDesign,
    audit: Option<&AuditTables>,
    check: impl FnOnce(&'a mut DB::Connection, &'a SqlDesign) -> F,
) -> Result<(), InstallError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    F: Future<Output = Result<(), DesignError>>,
{
    let custom = d.dir.is_some();
    let schema_error =
        |file: String, reason: String| InstallError::Design(DesignError { file, reason });
    let failed = |e: sqlx::Error| match custom {
        true => schema_error(
            d.file("schema.sql"),
            format!("does not run: {}", one_line(&e)),
        ),
        false => InstallError::Backend(e.into()),
    };
    run_all::<DB>(&mut *conn, &d.sql.schema)
        .await
        .map_err(failed)?;
    if custom && let Err(e) = has_table::<DB>(&mut *conn, &d.table).await {
        return Err(schema_error(
            d.file("schema.sql"),
            format!(
                "creates no table {table} ({e}): the harness reads the queue table by this name \
                 (its statistics, ANALYZE, the completion audit's trigger); name the design's \
                 queue table {table}, or declare its own name in design.toml (table = \"…\")",
                table = d.table,
                e = one_line(&e)
            ),
        ));
    }
    run_all::<DB>(&mut *conn, &d.sql.harness_ddl)
        .await
        .map_err(|e| {
            schema_error(
                d.file("design.toml"),
                format!(
                    "the harness's view of its declared states does not install: {}",
                    one_line(&e)
                ),
            )
        })?;
    if let Some(audit) = audit {
        install_audit::<DB>(&mut *conn, d, audit)
            .await
            .map_err(|e| match custom {
                true => schema_error(
                    d.file("schema.sql"),
                    format!(
                        "the harness's completion audit does not install on its tables: {}; a design without a status column in the harness's words declares its state column and names in design.toml ([states]) or brings audit.sql",
                        one_line(&e)
                    ),
                ),
                false => InstallError::Backend(e.into()),
            })?;
    }
    if custom {
        check(conn, d).await.map_err(InstallError::Design)?;
    }
    Ok(())
}
