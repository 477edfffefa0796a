//! A custom design's statements checked against MariaDB before any load: each one is
//! prepared (the inserts also run once, rolled back), those whose rows the harness reads
//! must return the columns it reads, and the claim's columns must have the types it decodes.
//! Names the file of the first that fails.

use crate::backend::seam::DesignError;
use crate::backend::sql::design::{Returning, SqlDesign, missing_columns};
use crate::backend::sql::{column_type, one_line};
use sqlx::mysql::{MySqlConnection, MySqlStatement};
use sqlx::{AssertSqlSafe, Column, Executor, Row, Statement};

pub(super) async fn check_statements(
    conn: &mut MySqlConnection,
    d: &SqlDesign,
) -> Result<(), DesignError> {
    for (file, text, columns) in d.sql.checks(Returning::Nothing) {
        let fail = |reason: String| DesignError {
            file: d.file(file),
            reason,
        };
        let statement = conn
            .prepare(sqlx::SqlSafeStr::into_sql_str(AssertSqlSafe(
                text.to_string(),
            )))
            .await
            .map_err(|e| fail(format!("does not prepare: {}", one_line(&e))))?;
        let mut returned: Vec<String> = names(statement.columns());
        if returned.is_empty() && matches!(file, "enqueue.sql" | "prefill.sql") {
            returned = returned_by_insert(conn, file, text)
                .await
                .map_err(|e| fail(format!("does not run: {}", one_line(&e))))?;
        }
        let returned: Vec<&str> = returned.iter().map(String::as_str).collect();
        missing_columns(columns, &returned).map_err(fail)?;
        match file {
            "claim.sql" => claim_types(&statement).map_err(fail)?,
            _ => proof_types(file, &statement).map_err(fail)?,
        }
    }
    Ok(())
}

fn names(columns: &[sqlx::mysql::MySqlColumn]) -> Vec<String> {
    columns.iter().map(|c| c.name().to_string()).collect()
}

/// MariaDB's prepare describes no columns for `INSERT … RETURNING`: the insert is run once
/// with a sample job, bound as the harness binds it, in a transaction rolled back, and its
/// row's columns read.
async fn returned_by_insert(
    conn: &mut MySqlConnection,
    file: &str,
    text: &str,
) -> sqlx::Result<Vec<String>> {
    const TYPE: &str = "dbq-bench-check";
    conn.execute("BEGIN").await?;
    let query = sqlx::query(AssertSqlSafe(text));
    let query = match file {
        "enqueue.sql" => query.bind(TYPE).bind("{}").bind(0).bind(1),
        _ => query.bind(1).bind(format!(r#"[["{TYPE}","{{}}",0]]"#)),
    };
    let rows = query.fetch_all(&mut *conn).await;
    conn.execute("ROLLBACK").await?;
    Ok(rows?
        .first()
        .map(|r| names(r.columns()))
        .unwrap_or_default())
}

/// The columns the proof decodes as integers are signed integers (any width decodes; an
/// `UNSIGNED` one does not, and would fail the proof after the drain): a job's `id` where the
/// proof looks jobs up, and `job_status.sql`'s `retry_count`.
fn proof_types(file: &str, statement: &MySqlStatement) -> Result<(), String> {
    let columns: &[&str] = match file {
        "job_status.sql" => &["id", "retry_count"],
        "untracked.sql" | "jobs_by_key.sql" => &["id"],
        _ => &[],
    };
    for column in columns {
        let t = column_type(statement, column);
        if !t.contains("INT") || t.contains("UNSIGNED") {
            return Err(format!(
                "returns {column} as {t}; the proof reads it as a signed integer: cast it (`CAST({column} AS SIGNED)`)"
            ));
        }
    }
    Ok(())
}

/// The claim's `id` is a `BIGINT` and its `payload` text holding JSON (MariaDB's `JSON` is
/// `LONGTEXT`): a payload of another type would lose the job's latency stamps and poison
/// flag.
fn claim_types(statement: &MySqlStatement) -> Result<(), String> {
    let type_of = |name: &str| column_type(statement, name);
    let id = type_of("id");
    if id != "BIGINT" {
        return Err(format!(
            "returns id as {id}; the harness tracks jobs by a BIGINT id: cast it (`CAST(id AS SIGNED)`), or for a uuid key add a BIGINT AUTO_INCREMENT column and return it as id"
        ));
    }
    let payload = type_of("payload");
    // MariaDB's JSON is LONGTEXT, which a prepared statement may describe as a BLOB.
    let stringlike = ["JSON", "TEXT", "CHAR", "BLOB", "BINARY"];
    if !stringlike.iter().any(|t| payload.contains(t)) {
        return Err(format!(
            "returns payload as {payload}; the harness reads the job's stamps from it as JSON: return JSON, or text holding JSON"
        ));
    }
    Ok(())
}
