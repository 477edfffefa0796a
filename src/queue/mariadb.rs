//! The queue's steps on MariaDB. The statements are the variant's (`mariadb/*.sql`); what
//! differs from PostgreSQL is how they are run: MariaDB has no `UPDATE … RETURNING`, so a
//! claim is a locking SELECT and then an UPDATE, a failure update reads the status back, and
//! the reaper locks the stale jobs before it updates them; and it has no arrays, so a list of
//! ids travels as one bound JSON array that the statement reads with `JSON_TABLE`.

use super::{
    ClaimShape, ClaimedJob, CompleteShape, FailOutcome, JobPayload, JobStatus, NewJob, Queue,
    TableMismatch, TableStats,
};
use crate::scenario::Jitter;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Row};
use std::time::Duration;

const COMPLETION_AUDIT: &str = include_str!("../../migrations/mariadb/0002_completion_audit.sql");
/// The audit's query is plain SQL that both engines run as it is.
const AUDIT_DUPLICATES: &str = include_str!("audit_duplicates.sql");

/// The table's rows (InnoDB's estimate), its sizes, and InnoDB's history list length (undo
/// records not purged yet: MariaDB's counterpart of dead tuples).
const TABLE_SIZES: &str = "
SELECT CAST(t.TABLE_ROWS AS SIGNED),
       (SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'),
       CAST(t.DATA_LENGTH AS SIGNED),
       CAST(t.DATA_LENGTH + t.INDEX_LENGTH AS SIGNED)
FROM   information_schema.TABLES t
WHERE  t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = ?";

/// A JSON array of ids, the form every MariaDB statement takes a list of ids in.
pub(super) fn json_ids(ids: &[i64]) -> String {
    let mut s = String::with_capacity(ids.len() * 8 + 2);
    s.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&id.to_string());
    }
    s.push(']');
    s
}

fn text(sql: &str) -> AssertSqlSafe<&str> {
    // Every statement here is one of the variant's own files.
    AssertSqlSafe(sql)
}

fn follow_up<'a>(sql: &'a Option<String>, what: &str) -> sqlx::Result<&'a str> {
    sql.as_deref()
        .ok_or_else(|| sqlx::Error::Protocol(format!("the MariaDB variant has no {what}")))
}

pub(super) async fn install(
    q: &Queue,
    conn: &mut MySqlConnection,
    completion_audit: bool,
) -> sqlx::Result<()> {
    for ddl in &q.variant.sql.schema {
        sqlx::raw_sql(text(ddl)).execute(&mut *conn).await?;
    }
    if completion_audit {
        sqlx::raw_sql(COMPLETION_AUDIT).execute(&mut *conn).await?;
    }
    Ok(())
}

pub(super) async fn enqueue(
    q: &Queue,
    conn: &mut MySqlConnection,
    job: &NewJob,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(text(&q.variant.sql.enqueue))
        .bind(&job.job_type)
        .bind(&job.payload)
        .bind(job.priority)
        .bind(q.max_retries)
        .fetch_one(&mut *conn)
        .await
}

pub(super) async fn enqueue_batch(
    q: &Queue,
    conn: &mut MySqlConnection,
    jobs: &[NewJob],
) -> sqlx::Result<Vec<i64>> {
    let rows: Vec<(&str, &str, i32)> = jobs
        .iter()
        .map(|j| (j.job_type.as_str(), j.payload.as_str(), j.priority))
        .collect();
    let rows = serde_json::to_string(&rows).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query_scalar(text(&q.variant.sql.prefill))
        .bind(q.max_retries)
        .bind(rows)
        .fetch_all(&mut *conn)
        .await
}

/// The locking SELECT, then the UPDATE of what it locked; inside the caller's transaction.
pub(super) async fn claim(q: &Queue, conn: &mut MySqlConnection) -> sqlx::Result<Vec<ClaimedJob>> {
    let mut select = sqlx::query(text(&q.variant.sql.claim));
    if let ClaimShape::Batch(n) = q.variant.claim {
        select = select.bind(i64::from(n));
    }
    let rows = select.fetch_all(&mut *conn).await?;
    let jobs = rows
        .iter()
        .map(|row| {
            let payload: String = row.try_get("payload")?;
            Ok(ClaimedJob {
                id: row.try_get("id")?,
                job_type: row.try_get("type")?,
                payload: serde_json::from_str::<JobPayload>(&payload).unwrap_or_default(),
            })
        })
        .collect::<sqlx::Result<Vec<_>>>()?;
    if jobs.is_empty() {
        return Ok(jobs);
    }
    let mark = sqlx::query(text(follow_up(
        &q.variant.sql.mark_claimed,
        "mark_claimed.sql",
    )?));
    let mark = match q.variant.claim {
        ClaimShape::Single => mark.bind(jobs[0].id),
        ClaimShape::Batch(_) => mark.bind(json_ids(&jobs.iter().map(|j| j.id).collect::<Vec<_>>())),
    };
    mark.execute(&mut *conn).await?;
    Ok(jobs)
}

/// The claim in a transaction of its own (claim mode `committed`).
pub(super) async fn claim_alone(
    q: &Queue,
    conn: &mut MySqlConnection,
) -> sqlx::Result<Vec<ClaimedJob>> {
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
    match claim(q, conn).await {
        Ok(jobs) => {
            sqlx::raw_sql("COMMIT").execute(&mut *conn).await?;
            Ok(jobs)
        }
        Err(e) => {
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
            Err(e)
        }
    }
}

pub(super) async fn complete(
    q: &Queue,
    conn: &mut MySqlConnection,
    ids: &[i64],
) -> sqlx::Result<()> {
    let sql = text(&q.variant.sql.complete);
    match q.variant.complete {
        CompleteShape::PerBatch => {
            sqlx::query(sql)
                .bind(json_ids(ids))
                .execute(&mut *conn)
                .await?;
        }
        CompleteShape::PerJob => {
            for id in ids {
                sqlx::query(text(&q.variant.sql.complete))
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
            }
        }
    }
    Ok(())
}

/// The failure update, then the job's status read back (no RETURNING on UPDATE).
pub(super) async fn fail(
    q: &Queue,
    conn: &mut MySqlConnection,
    id: i64,
    error: &str,
) -> sqlx::Result<FailOutcome> {
    let jitter = match q.backoff.jitter {
        Jitter::None => 1.0,
        Jitter::Equal => 0.5,
        Jitter::Full => 0.0,
    };
    let micros = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    sqlx::query(text(&q.variant.sql.fail))
        .bind(error)
        .bind(micros(q.backoff.base))
        .bind(q.backoff.factor)
        .bind(q.backoff.cap.map(micros))
        .bind(jitter)
        .bind(jitter)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let statuses = job_statuses(q, conn, &[id]).await?;
    Ok(match statuses.first() {
        Some((_, JobStatus::DeadLetter, _)) => FailOutcome::DeadLettered,
        _ => FailOutcome::Retry,
    })
}

/// The reaper in one transaction of its own: lock the stale jobs, update them, read their
/// statuses back.
pub(super) async fn reap(
    q: &Queue,
    conn: &mut MySqlConnection,
    stale_after: Duration,
    count_as_attempt: bool,
) -> sqlx::Result<Vec<(i64, bool)>> {
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await?;
    let reaped = async {
        let stale_us = i64::try_from(stale_after.as_micros()).unwrap_or(i64::MAX);
        let ids: Vec<i64> = sqlx::query_scalar(text(follow_up(
            &q.variant.sql.find_stale,
            "find_stale.sql",
        )?))
        .bind(stale_us)
        .fetch_all(&mut *conn)
        .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let update = if count_as_attempt {
            &q.variant.sql.reap_counting
        } else {
            &q.variant.sql.reap
        };
        sqlx::query(text(update))
            .bind(json_ids(&ids))
            .execute(&mut *conn)
            .await?;
        job_statuses(q, conn, &ids).await
    }
    .await;
    match reaped {
        Ok(rows) => {
            sqlx::raw_sql("COMMIT").execute(&mut *conn).await?;
            Ok(rows
                .into_iter()
                .map(|(id, status, _)| (id, status == JobStatus::DeadLetter))
                .collect())
        }
        Err(e) => {
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
            Err(e)
        }
    }
}

pub(super) async fn job_statuses(
    q: &Queue,
    conn: &mut MySqlConnection,
    ids: &[i64],
) -> sqlx::Result<Vec<(i64, JobStatus, Option<i32>)>> {
    sqlx::query_as(text(&q.variant.sql.job_status))
        .bind(json_ids(ids))
        .fetch_all(&mut *conn)
        .await
}

pub(super) async fn jobs_by_key(
    q: &Queue,
    conn: &mut MySqlConnection,
    keys: &[String],
) -> sqlx::Result<Vec<(i64, String)>> {
    let keys = serde_json::to_string(keys).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query_as(text(&q.variant.sql.jobs_by_key))
        .bind(keys)
        .fetch_all(&mut *conn)
        .await
}

pub(super) async fn table_stats(q: &Queue, conn: &mut MySqlConnection) -> sqlx::Result<TableStats> {
    let (live_tuples, dead_tuples, table_bytes, total_bytes): (i64, Option<i64>, i64, i64) =
        sqlx::query_as(TABLE_SIZES)
            .bind(q.variant.table)
            .fetch_one(&mut *conn)
            .await?;
    Ok(TableStats {
        live_tuples,
        dead_tuples: dead_tuples.unwrap_or(0),
        table_bytes,
        total_bytes,
    })
}

pub(super) async fn analyze(q: &Queue, conn: &mut MySqlConnection) -> sqlx::Result<()> {
    // The table name is the variant's constant, not user input.
    sqlx::raw_sql(AssertSqlSafe(format!("ANALYZE TABLE {}", q.variant.table)))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// `EXPLAIN` of the claim's SELECT, one line per table it reads.
pub(super) async fn explain_claim(
    q: &Queue,
    conn: &mut MySqlConnection,
) -> sqlx::Result<Vec<String>> {
    let mut query = sqlx::query(AssertSqlSafe(format!("EXPLAIN {}", q.claim_sql())));
    if let ClaimShape::Batch(n) = q.variant.claim {
        query = query.bind(i64::from(n));
    }
    let rows = query.fetch_all(&mut *conn).await?;
    Ok(rows
        .iter()
        .map(|r| {
            let get = |c: &str| r.try_get::<Option<String>, _>(c).ok().flatten();
            format!(
                "{} on {} using {} ({})",
                get("type").unwrap_or_default(),
                get("table").unwrap_or_default(),
                get("key").unwrap_or_else(|| "no index".into()),
                get("Extra").unwrap_or_default()
            )
        })
        .collect())
}

pub(super) async fn pending_count(q: &Queue, conn: &mut MySqlConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar(text(&q.variant.sql.pending_count))
        .fetch_one(&mut *conn)
        .await
}

pub(super) async fn table_mismatches(
    q: &Queue,
    conn: &mut MySqlConnection,
    ids: &[i64],
    expected: &[&str],
) -> sqlx::Result<Vec<TableMismatch>> {
    let pairs: Vec<(i64, &str)> = ids.iter().copied().zip(expected.iter().copied()).collect();
    let pairs = serde_json::to_string(&pairs).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let rows = sqlx::query(text(&q.variant.sql.ledger_check))
        .bind(pairs)
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

pub(super) async fn untracked_between(
    q: &Queue,
    conn: &mut MySqlConnection,
    known: &[i64],
    from: i64,
    to: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(text(&q.variant.sql.untracked))
        .bind(from)
        .bind(to)
        .bind(json_ids(known))
        .fetch_all(&mut *conn)
        .await
}

pub(super) async fn audited_duplicates(
    conn: &mut MySqlConnection,
) -> sqlx::Result<Vec<(i64, i64)>> {
    sqlx::query_as(AUDIT_DUPLICATES).fetch_all(&mut *conn).await
}

#[cfg(test)]
mod tests {
    use super::json_ids;

    #[test]
    fn ids_travel_as_a_json_array() {
        assert_eq!(json_ids(&[]), "[]");
        assert_eq!(json_ids(&[1, -2, 30]), "[1,-2,30]");
    }
}
