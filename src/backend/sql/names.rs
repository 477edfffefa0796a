//! Named parameters in a custom design's statements other than the claim and the failure
//! update (which bind by [`super::design::SqlDesign::bind_statements`]). Rules: on
//! PostgreSQL each statement's names are its values in the order the harness binds them
//! (`:payload` in enqueue.sql is `$2` whichever others it uses), so a statement may name
//! any subset, or keep the positional `$n`, but not mix the two; on MariaDB, whose `?` bind
//! in order of appearance, these statements keep their `?` and a name is refused. DDL files
//! (schema.sql, audit.sql) and design.toml are not statements the harness binds.

use crate::backend::seam::DesignError;
use crate::named_params::{
    BatchCompleteParam, CompleteParam, EnqueueParam, IdsParam, KeysParam, LedgerParam, Named,
    NoParam, Placeholders, PrefillParam, ReapParam, rewrite,
};
use std::collections::BTreeMap;
use std::path::Path;

/// The statements read so far, by file name.
pub type Files<'a> = BTreeMap<&'a str, Option<String>>;

/// What the names said about how the design is bound.
#[derive(Debug, Clone, Copy)]
pub struct Binds {
    /// How many values the reaper's statements take (1: the threshold alone; up to 5 with
    /// the back-off).
    pub reap_values: usize,
    /// What complete.sql names: one job (`:id`) or the claimed batch (`:ids`), which is how
    /// it completes whatever `queue.claim_batch` is. `None`: positional, `$1` an id, or the
    /// batch's ids when claims take more than one.
    pub complete: Option<Completes>,
}

/// How many jobs one completion statement finishes, by the name it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completes {
    /// `:id`.
    OneJob,
    /// `:ids`.
    Batch,
}

/// Rewrites the names of each statement in `files` to the engine's placeholders: fixed
/// positions where the engine numbers them (`numbered`, PostgreSQL), none allowed otherwise.
pub fn name_the_rest(
    dir: &Path,
    files: &mut Files<'_>,
    numbered: bool,
) -> Result<Binds, DesignError> {
    let mut binds = Binds {
        reap_values: 1,
        complete: None,
    };
    for (name, text) in files.iter_mut() {
        let Some(sql) = text else { continue };
        let fail = |reason: String| DesignError {
            file: dir.join(name).display().to_string(),
            reason,
        };
        let named = match numbered {
            false => named::<NoParam>(sql),
            true => match *name {
                "enqueue.sql" => named::<EnqueueParam>(sql),
                "prefill.sql" => named::<PrefillParam>(sql),
                "complete.sql" => completion(sql, &mut binds.complete),
                "reap.sql" | "reap_counting.sql" => named::<ReapParam>(sql),
                "job_status.sql" | "untracked.sql" => named::<IdsParam>(sql),
                "ledger_check.sql" => named::<LedgerParam>(sql),
                "jobs_by_key.sql" => named::<KeysParam>(sql),
                _ => named::<NoParam>(sql),
            },
        };
        let Some(rewritten) = named.map_err(fail)? else {
            continue;
        };
        if name.starts_with("reap") {
            binds.reap_values = binds.reap_values.max(rewritten.1);
        }
        *sql = rewritten.0;
    }
    Ok(binds)
}

/// complete.sql by its name: `:id`, one job per statement, or `:ids`, the claimed batch.
fn completion(sql: &str, shape: &mut Option<Completes>) -> Result<Option<(String, usize)>, String> {
    if let Ok(one) = named::<CompleteParam>(sql) {
        *shape = one.as_ref().map(|_| Completes::OneJob);
        return Ok(one);
    }
    let batch = named::<BatchCompleteParam>(sql).map_err(|_| {
        "takes a name it is not given: it takes :id (one job per statement) or :ids (the claimed batch's ids), not both".to_string()
    })?;
    *shape = batch.as_ref().map(|_| Completes::Batch);
    Ok(batch)
}

/// The statement with `P`'s names as fixed positions, and the highest position it uses;
/// `None` when it names nothing.
fn named<P: Named>(sql: &str) -> Result<Option<(String, usize)>, String> {
    let r = rewrite::<P>(sql, Placeholders::Fixed)?;
    if r.binds.is_empty() {
        return Ok(None);
    }
    if r.positional {
        return Err(
            "mixes named parameters with positional ones: write every value by its name".into(),
        );
    }
    let highest = r
        .binds
        .iter()
        .filter_map(|b| P::ALL.iter().position(|p| p == b))
        .max()
        .map_or(1, |i| i + 1);
    Ok(Some((r.sql, highest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_the_place_the_harness_binds_them_in() {
        let (sql, highest) = named::<EnqueueParam>(
            "INSERT INTO q (args, kind) VALUES (:payload::jsonb, :type) RETURNING id",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            sql,
            "INSERT INTO q (args, kind) VALUES ($2::jsonb, $1) RETURNING id"
        );
        assert_eq!(highest, 2);
        let (_, reap) = named::<ReapParam>("… < now() - :stale_after … :backoff_cap …")
            .unwrap()
            .unwrap();
        assert_eq!(reap, 4);
        assert_eq!(named::<IdsParam>("SELECT $1").unwrap(), None);
        assert!(
            named::<IdsParam>("SELECT :ids, $2")
                .unwrap_err()
                .contains("mixes")
        );
        assert!(
            named::<KeysParam>("SELECT :ids")
                .unwrap_err()
                .contains(":keys")
        );
    }

    #[test]
    fn a_completion_completes_one_job_or_the_batch_by_the_name_it_takes() {
        let shape = |sql: &str| {
            let mut shape = None;
            completion(sql, &mut shape).map(|_| shape)
        };
        assert_eq!(shape("… WHERE id = :id"), Ok(Some(Completes::OneJob)));
        assert_eq!(shape("… WHERE id = ANY(:ids)"), Ok(Some(Completes::Batch)));
        assert_eq!(
            shape("… WHERE id = $1"),
            Ok(None),
            "positional: the claim size decides"
        );
        assert!(shape("… :id … :ids").unwrap_err().contains("not both"));
    }
}
