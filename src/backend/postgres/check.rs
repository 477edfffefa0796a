//! A custom design's statements checked against PostgreSQL before any load: each one is
//! prepared with its parameters typed as the harness binds them, those whose rows the
//! harness reads must return the columns it reads, and the claim's columns must have the
//! types it decodes. Names the file of the first that fails.

use crate::backend::seam::DesignError;
use super::link::TEXT_TYPES;
use crate::backend::sql::design::{CompleteShape, Returning, SqlDesign, missing_columns};
use crate::backend::sql::{column_type, one_line};
use sqlx::postgres::{PgConnection, PgTypeInfo};
use sqlx::{AssertSqlSafe, Executor};

/// Checks a custom design's statements against the installed schema: each one is prepared,
/// those whose rows the harness reads must return the columns it reads, and the claim's
/// columns must have the types it decodes (never read as defaults). Names the file of the
/// first statement that fails.
pub(super) async fn check_statements(
    conn: &mut PgConnection,
    d: &SqlDesign,
) -> Result<(), DesignError> {
    use sqlx::{Column, Statement};
    // A design without a reaper has no reaper statements to check.
    for (file, text, columns) in d.sql.checks(Returning::Rows) {
        let statement = prepare_as_bound(conn, d, file, text)
            .await
            .map_err(|e| DesignError {
                file: d.file(file),
                reason: format!("does not prepare: {}", one_line(&e)),
            })?;
        let returned: Vec<&str> = statement.columns().iter().map(|c| c.name()).collect();
        missing_columns(columns, &returned).map_err(|reason| DesignError {
            file: d.file(file),
            reason,
        })?;
        let typed = match file {
            "claim.sql" => claim_types(&statement),
            _ => proof_types(file, &statement),
        };
        typed.map_err(|reason| DesignError {
            file: d.file(file),
            reason,
        })?;
    }
    Ok(())
}

/// Prepares `text`; the completion's `$1` typed as the harness binds it (an id, or the
/// batch's ids), so a statement written for the other shape fails here, not under load.
async fn prepare_as_bound(
    conn: &mut PgConnection,
    d: &SqlDesign,
    file: &str,
    text: &str,
) -> sqlx::Result<sqlx::postgres::PgStatement> {
    let names: &[&str] = match (file, d.complete) {
        ("complete.sql", CompleteShape::PerJob) => &["int8"],
        ("complete.sql", CompleteShape::PerBatch) => &["_int8"],
        ("enqueue.sql", _) => &["text", "text", "int4", "int4"],
        ("prefill.sql", _) => &["_text", "_text", "_int4", "int4"],
        ("reap.sql" | "reap_counting.sql", _) if d.reap_values > 1 => {
            &["interval", "interval", "float8", "interval", "float8"]
        }
        ("job_status.sql" | "untracked.sql", _) => &["_int8"],
        ("ledger_check.sql", _) => &["_int8", "_text"],
        ("jobs_by_key.sql", _) => &["_text"],
        _ => &[],
    };
    // Each value typed as the harness binds it, so a statement that names only some of
    // them (`$2` without `$1`) prepares as it will run.
    let types: Vec<PgTypeInfo> = names.iter().map(|n| PgTypeInfo::with_name(n)).collect();
    conn.prepare_with(
        sqlx::SqlSafeStr::into_sql_str(AssertSqlSafe(text.to_string())),
        &types,
    )
    .await
}

/// The claim's `id` is a `bigint` and its `payload` JSON or text (read as JSON): a payload of
/// another type would lose the job's latency stamps and poison flag.
/// The columns the proof decodes have the types it decodes them as: a job's `id` a bigint
/// wherever the proof looks jobs up, and `job_status.sql`'s `retry_count` an int4 (a smallint
/// would pass every check until the proof, then fail it after the drain).
fn proof_types(file: &str, statement: &sqlx::postgres::PgStatement) -> Result<(), String> {
    let type_of = |name: &str| column_type(statement, name);
    if matches!(file, "job_status.sql" | "untracked.sql" | "jobs_by_key.sql") {
        let id = type_of("id");
        if id != "INT8" {
            return Err(format!(
                "returns id as {id}; the proof looks jobs up by their bigint id: cast it (`id::bigint`)"
            ));
        }
    }
    if file == "job_status.sql" {
        let retries = type_of("retry_count");
        if retries != "INT4" {
            return Err(format!(
                "returns retry_count as {retries}; the proof reads the failed attempts as an int4: cast it (`retry_count::int`)"
            ));
        }
    }
    Ok(())
}

fn claim_types(statement: &sqlx::postgres::PgStatement) -> Result<(), String> {
    let type_of = |name: &str| column_type(statement, name);
    let id = type_of("id");
    if id != "INT8" {
        return Err(format!(
            "returns id as {id}; the harness tracks jobs by a bigint id: cast it (`id::bigint`), or for a uuid key add a bigint identity column and return it as id (scenarios/custom-uuid/ shows how)"
        ));
    }
    let payload = type_of("payload");
    if !matches!(payload.as_str(), "JSON" | "JSONB") && !TEXT_TYPES.contains(&payload.as_str()) {
        return Err(format!(
            "returns payload as {payload}; the harness reads the job's stamps from it as JSON: \
             return json, jsonb or text holding JSON"
        ));
    }
    Ok(())
}
