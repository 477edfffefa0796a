//! What the SQL engines share: their errors in the seam's classes, status counts read
//! through a design's state words, a queue design as statements (`design`) and in its own
//! words (`declared`), and what a completion statement did (`completion`).

pub mod bystander;
pub mod catalogue;
pub mod completion;
pub mod custom;
pub mod declared;
pub mod design;
pub mod driver;
pub mod inspect;
pub mod link;
pub mod names;
pub mod queue;
pub mod rehearsal;
pub mod server;

use super::engine::Supports;
use super::error::{BackendError, ErrorClass};
use super::job::JobStatus;
use super::seam::{DesignInfo, InstallError};
use crate::backend::queue::{BackoffPlan, QueuePlan};
use design::SqlDesign;
use std::sync::Arc;

impl From<sqlx::Error> for BackendError {
    fn from(e: sqlx::Error) -> BackendError {
        let code = match &e {
            sqlx::Error::Database(db) => db.code().map(|c| c.to_string()),
            _ => None,
        };
        BackendError {
            class: class_of(&e),
            message: one_line(&e),
            code,
        }
    }
}

/// What a SQL engine supports unless its facts say otherwise: claims in a transaction or
/// committed alone, the completion audit, the bystander and the planner's statistics; no
/// consumer group, no provenance, no settings of its own. Its designs, faults and options
/// are each engine's.
pub const SUPPORTS: Supports = Supports {
    variants: &[],
    faults: &[],
    table_options: false,
    outbox: false,
    url_session_settings: false,
    calibrate: false,
    claim_in_transaction: true,
    claim_committed: true,
    own_keys: &[],
    completion_audit: true,
    bystander: true,
    at_least_once_completions: false,
    group: false,
    provenance: false,
    planner_statistics: true,
};

/// What a SQL queue's connections share: the design, the namespace and the values bound into
/// the statements.
pub struct Shared {
    pub design: SqlDesign,
    pub info: DesignInfo,
    pub namespace: String,
    pub backoff: BackoffPlan,
    pub max_retries: i32,
}

impl Shared {
    pub fn new(namespace: String, design: SqlDesign, q: &QueuePlan) -> Arc<Shared> {
        Arc::new(Shared {
            info: design.info(),
            design,
            namespace,
            backoff: q.backoff,
            max_retries: q.max_retries,
        })
    }
}

/// A full sample's counts by status (status_counts.sql's words, the harness's or the states
/// a design declares; several of a design's states may count as one of the harness's).
pub fn count_statuses(
    design: &SqlDesign,
    counts: Vec<(String, i64)>,
    s: &mut super::figures::DbSample,
) -> Result<(), BackendError> {
    let (mut pending, mut processing, mut done, mut dead) = (0, 0, 0, 0);
    for (n, status) in design.statuses("status_counts.sql", swap(counts))? {
        *match status {
            JobStatus::Pending => &mut pending,
            JobStatus::Processing => &mut processing,
            JobStatus::Done => &mut done,
            JobStatus::DeadLetter => &mut dead,
        } += n;
    }
    s.pending = pending;
    (s.processing, s.done, s.dead_letter) = (Some(processing), Some(done), Some(dead));
    Ok(())
}

/// `(word, n)` rows as `(n, word)`, the order [`SqlDesign::statuses`] reads.
fn swap(rows: Vec<(String, i64)>) -> Vec<(i64, String)> {
    rows.into_iter().map(|(w, n)| (n, w)).collect()
}

impl From<sqlx::Error> for InstallError {
    fn from(e: sqlx::Error) -> InstallError {
        InstallError::Backend(e.into())
    }
}

/// How an error of a SQL engine bears on the harness.
///
/// - Connection: I/O, TLS, protocol errors; SQLSTATE 08xxx (connection exceptions), 57P0x
///   (terminated, shutdown, idle session timeout), 25P03/25P04 (the session ended for idling
///   in or overrunning a transaction, both FATAL), MariaDB's 70100 (KILL CONNECTION).
/// - Permanent: the server rejects the statement itself (classes 22 data, 23 integrity, 42
///   syntax or access, 0A not supported, 28 authorization, 3D/3F no such database or
///   schema), or the connection options are unusable.
/// - Transient: everything else (serialization failures, deadlocks, lock and statement
///   timeouts, resource shortages, a server still starting up).
fn class_of(e: &sqlx::Error) -> ErrorClass {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => ErrorClass::Connection,
        sqlx::Error::Configuration(_) => ErrorClass::Permanent,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            if code.starts_with("08")
                || code.starts_with("57P")
                || ["25P03", "25P04", "70100"].contains(&code.as_ref())
            {
                ErrorClass::Connection
            } else if ["22", "23", "42", "0A", "28", "3D", "3F"]
                .iter()
                .any(|class| code.starts_with(class))
            {
                ErrorClass::Permanent
            } else {
                ErrorClass::Transient
            }
        }
        _ => ErrorClass::Transient,
    }
}

/// The type a prepared statement gives its column `name`, as the engine names it (`INT8`,
/// `BIGINT`, …); empty when it has no such column. What a custom claim's types are checked by.
pub fn column_type<S: sqlx::Statement>(statement: &S, name: &str) -> String {
    use sqlx::{Column, TypeInfo};
    statement
        .columns()
        .iter()
        .find(|c| c.name() == name)
        .map(|c| c.type_info().name().to_string())
        .unwrap_or_default()
}

/// A database error's message alone, on one line.
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

/// The name a run gives its namespace: `<prefix>_<unix time>_<random>`,
/// made of a validated prefix, digits and hex, so it may be spliced into DDL.
pub fn namespace_name(prefix: &str) -> Result<String, BackendError> {
    if prefix.is_empty()
        || !prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(BackendError::new(
            ErrorClass::Permanent,
            format!("invalid namespace prefix {prefix:?}"),
        ));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Ok(format!("{prefix}_{stamp}_{:08x}", rand::random::<u32>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_as_itself() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(JobStatus::parse("open"), None);
        assert_eq!(JobStatus::ALL.iter().filter(|s| s.is_final()).count(), 2);
    }

    #[test]
    fn namespaces_are_plain_identifiers() {
        let n = namespace_name("dbq_run").unwrap();
        assert!(n.starts_with("dbq_run_"), "{n}");
        assert!(namespace_name("a\"; drop").is_err());
    }
}
