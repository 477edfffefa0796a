//! The `[queue]` section's plan: the design and its options, retries and back-off, and the
//! checks of what a design's statements take.

use super::*;

/// The `[queue]` section, checked: the variant and its options, retries and backoff. What a
/// variant needs is asked of its kind; nothing is built or read here.
pub(super) fn queue_plan(scenario: &Scenario, source: &str) -> Result<QueuePlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let q = &scenario.queue;
    if !(0..=1000).contains(&q.max_retries) {
        return Err(err(
            "queue.max_retries",
            format!("must be between 0 and 1000, got {}", q.max_retries),
        ));
    }
    let b = &q.backoff;
    check_backoff(b).map_err(|(key, reason)| err(key, reason))?;
    let claim_batch = claim_batch_of(q).map_err(|r| err("queue.claim_batch", r))?;
    let (dir, workers) = custom_dir_of(q, source).map_err(|r| err("queue.dir", r))?;
    let visibility_timeout =
        visibility_timeout_of(q).map_err(|r| err("queue.visibility_timeout", r))?;
    let rotation_period = rotation_period_of(q).map_err(|r| err("queue.rotation_period", r))?;
    check_design_options(scenario).map_err(|(key, reason)| err(key, reason))?;
    let variant = VariantPlan {
        name: q.variant,
        claim_batch,
        visibility_timeout,
        rotation_period,
        dir,
        fillfactor: q.fillfactor.map(|f| f.0),
        unlogged: q.unlogged,
        workers,
    };
    Ok(QueuePlan {
        variant,
        max_retries: q.max_retries,
        backoff: b.into(),
        stale_statistics: q.stale_statistics,
        redeliveries_count: scenario.reaper.enabled && scenario.reaper.count_as_attempt,
        engine: engine_settings(scenario).map_err(|(key, reason)| err(key.as_str(), reason))?,
        // Keys that are not integers are refused with the producers' section.
        priorities: {
            let set: std::collections::BTreeSet<i32> = scenario
                .producers
                .priorities
                .keys()
                .filter_map(|k| k.trim().parse().ok())
                .collect();
            set.into_iter().collect()
        },
    })
}

/// The settings of `[queue]` that only the scenario's engine acts on, read by the engine's
/// own settings type. A key another engine owns is left for the engine check, which
/// refuses it in one line naming the engines that take it.
fn engine_settings(scenario: &Scenario) -> Result<EngineSettings, (String, String)> {
    let q = &scenario.queue;
    let engine = scenario.database.engine;
    let own = engine.supports().own_keys;
    let mut keys = serde_json::Map::new();
    let given = [
        (
            "rabbitmq_queue",
            q.rabbitmq_queue.clone().map(serde_json::Value::from),
        ),
        ("partitions", q.partitions.map(|p| p.0.into())),
    ];
    for (key, value) in given {
        if let Some(value) = value.filter(|_| own.contains(&format!("queue.{key}").as_str())) {
            keys.insert(key.to_string(), value);
        }
    }
    EngineSettings::read(engine, keys)
}
/// Options that do not go with the chosen design: a partitioned table's storage options, a
/// design whose proof needs the completion audit without it, the outbox on a design that
/// removes finished jobs. The key and the reason, when one is set.
fn check_design_options(scenario: &Scenario) -> Result<(), (&'static str, String)> {
    let q = &scenario.queue;
    if q.variant == VariantName::Rotation && (q.fillfactor.is_some() || q.unlogged) {
        return Err((
            if q.unlogged {
                "queue.unlogged"
            } else {
                "queue.fillfactor"
            },
            "the rotation design's table is partitioned, and its partitions are truncated \
             rather than updated in place: leave fillfactor and unlogged out"
                .into(),
        ));
    }
    if q.variant.needs_audit() && scenario.verify.completion_audit == Some(false) {
        return Err((
            "verify.completion_audit",
            format!(
                "the {} variant needs the completion audit: it is how the proof tells a completed job whose row was deleted from a lost one",
                q.variant.as_str()
            ),
        ));
    }
    if scenario.producers.outbox.enabled && q.variant.finish() != Finish::Update {
        return Err((
            "producers.outbox",
            format!(
                "the outbox check reads finished jobs from the queue table; the {} variant removes them (use seed, batch, notify, plain_index or custom)",
                q.variant.as_str()
            ),
        ));
    }
    Ok(())
}

/// Jobs one claim takes: `queue.claim_batch` for the variants that claim in batches (batch:
/// 10 by default, custom: 1), 1 for the others.
pub(super) fn claim_batch_of(q: &crate::scenario::model::QueueSection) -> Result<u32, String> {
    let n = match (q.variant, q.claim_batch) {
        (VariantName::Batch, n) => n.unwrap_or(10),
        (VariantName::Custom, n) => n.unwrap_or(1),
        (_, None) => 1,
        (other, Some(_)) => {
            return Err(format!(
                "only the batch and custom variants claim in batches, not {}",
                other.as_str()
            ));
        }
    };
    if !(1..=10_000).contains(&n) {
        return Err(format!("must be between 1 and 10000, got {n}"));
    }
    Ok(n)
}

/// `queue.visibility_timeout`: for the designs with a claim that can take one.
pub(super) fn visibility_timeout_of(
    q: &crate::scenario::model::QueueSection,
) -> Result<Option<Duration>, String> {
    let Some(given) = q.visibility_timeout else {
        return Ok(None);
    };
    if !matches!(
        q.variant,
        VariantName::VisibilityTimeout | VariantName::Custom
    ) {
        return Err(format!(
            "the {} variant has no visibility timeout (visibility_timeout and custom designs do)",
            q.variant.as_str()
        ));
    }
    if given.0 < Duration::from_millis(100) {
        return Err(format!(
            "must be at least 100ms, got {given}; a claim would expire before its job ran"
        ));
    }
    Ok(Some(given.0))
}

/// `queue.rotation_period`: the rotation variant's only.
pub(super) fn rotation_period_of(
    q: &crate::scenario::model::QueueSection,
) -> Result<Duration, String> {
    match (q.variant, q.rotation_period) {
        (VariantName::Rotation, None) => Ok(Duration::from_secs(10)),
        (VariantName::Rotation, Some(p)) if p.0 < Duration::from_secs(1) => Err(format!(
            "must be at least 1s (the ticker runs once a second), got {p}"
        )),
        (VariantName::Rotation, Some(p)) => Ok(p.0),
        (_, None) => Ok(Duration::ZERO),
        (other, Some(_)) => Err(format!(
            "only the rotation variant rotates its tables, not {}",
            other.as_str()
        )),
    }
}

/// A `custom` variant's directory, resolved against the scenario file's and made absolute
/// (so the resolved scenario saved with the results names it wherever it is read), holding
/// every file the custom contract requires, and the library's worker processes when its
/// design.toml declares them.
pub(super) fn custom_dir_of(
    q: &crate::scenario::model::QueueSection,
    source: &str,
) -> Result<(Option<std::path::PathBuf>, Option<ExternalWorkers>), String> {
    let given = match (q.variant, &q.dir) {
        (VariantName::Custom, None) => {
            return Err("the custom variant needs the directory of its .sql files".into());
        }
        (VariantName::Custom, Some(d)) => d,
        (other, Some(_)) => {
            return Err(format!(
                "only the custom variant reads a directory, not {}",
                other.as_str()
            ));
        }
        (_, None) => return Ok((None, None)),
    };
    let base = std::path::Path::new(source)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let dir = base.join(given);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let shown = |e: crate::backend::DesignError| format!("{}: {}", e.file, e.reason);
    let workers = Declaration::read(&dir)
        .and_then(|d| d.external_workers(&dir))
        .map_err(shown)?;
    let required = required_files(workers.is_some());
    for name in required {
        let path = dir.join(name);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.len() > 0 => {}
            Ok(m) if m.is_file() => return Err(format!("{}: is empty", path.display())),
            _ => {
                return Err(format!(
                    "{}: is missing; a custom variant needs {}",
                    path.display(),
                    required.join(", ")
                ));
            }
        }
    }
    Ok((Some(dir), workers))
}

/// `[queue.backoff]`, checked; the error names its key.
pub(super) fn check_backoff(
    b: &crate::scenario::model::BackoffSection,
) -> Result<(), (&'static str, String)> {
    if !(b.factor.is_finite() && (1.0..=100.0).contains(&b.factor)) {
        return Err((
            "queue.backoff.factor",
            format!("must be between 1 and 100, got {}", b.factor),
        ));
    }
    if b.base.0 > 24 * HOUR || b.cap.is_some_and(|c| c.0 > 24 * HOUR) {
        return Err(("queue.backoff", "base and cap must be at most 24h".into()));
    }
    if let Some(cap) = b.cap
        && cap.0 < b.base.0
    {
        return Err((
            "queue.backoff.cap",
            format!(
                "must be at least the base ({}), got {}",
                humantime::format_duration(b.base.0),
                humantime::format_duration(cap.0)
            ),
        ));
    }
    Ok(())
}

/// What a design's claims ask of the scenario: Que's lock lasts the claim's transaction,
/// and a custom design without reap.sql has no reaper, so a committed claim of a crashed
/// worker could never come back.
pub(super) fn check_design_claims(
    queue: &QueuePlan,
    consumers: &ConsumerPlan,
    reaper: &crate::scenario::model::ReaperSection,
) -> Result<(), (&'static str, String)> {
    let committed = consumers.claim_mode == ClaimMode::Committed;
    if queue.variant.name == VariantName::AdvisoryLock && committed {
        return Err((
            "consumers.claim_mode",
            "the advisory_lock design's claim is a lock that ends with the claim's \
             transaction, so a claim committed before the work would leave the job free for \
             another worker: use claim_mode = \"in_transaction\""
                .into(),
        ));
    }
    if queue.variant.name == VariantName::VisibilityTimeout
        && committed
        && reaper.enabled
        && reaper.count_as_attempt
    {
        return Err((
            "reaper.count_as_attempt",
            "the visibility_timeout design has no reaper: a job whose worker died comes back \
             when its timeout runs out, and its read count is not capped (as in pgmq); use \
             count_as_attempt = false"
                .into(),
        ));
    }
    let Some(dir) = &queue.variant.dir else {
        return Ok(());
    };
    if queue.variant.workers.is_some() {
        // The library claims, and rescues its workers' jobs, by its own rules.
        return Ok(());
    }
    let has = |file: &str| dir.join(file).is_file();
    // A claim that hides its jobs for a visibility timeout recovers a lost worker's job by
    // itself, when the timeout runs out (the claim's text is checked in full at install).
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    let recovers_by_timeout = takes(&read("claim.sql"), ClaimParam::VisibilityTimeout)
        || takes(&read("mark_claimed.sql"), MarkParam::VisibilityTimeout);
    if committed && reaper.enabled && !has("reap.sql") && !recovers_by_timeout {
        return Err((
            "consumers.claim_mode",
            format!(
                "claims committed before the work need the design's reaper, and {} has no \
                 reap.sql: add one (with find_stale.sql on MariaDB; docs/designs.md lists both), \
                 hide claimed jobs for :visibility_timeout in claim.sql (mark_claimed.sql on \
                 MariaDB), or use claim_mode = \"in_transaction\"",
                dir.display()
            ),
        ));
    }
    if committed && reaper.enabled && reaper.count_as_attempt && !has("reap_counting.sql") {
        return Err((
            "reaper.count_as_attempt",
            format!(
                "counting reaps as attempts needs reap_counting.sql in {}, or count_as_attempt = false",
                dir.display()
            ),
        ));
    }
    Ok(())
}
