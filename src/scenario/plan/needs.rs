//! What a scenario needs of its engine, asked of the engine's facts: a scenario that needs
//! what the engine does not list is refused in one line naming the engines that have it.

use super::*;

/// One thing a scenario asks of its engine: the key that asks, what it is, and whether an
/// engine's row of the engine table has it.
pub(super) struct Need {
    key: String,
    what: String,
    met: Box<dyn Fn(&Supports) -> bool>,
}

impl Need {
    fn new(key: &str, what: String, met: impl Fn(&Supports) -> bool + 'static) -> Need {
        Need {
            key: key.to_string(),
            what,
            met: Box::new(met),
        }
    }
}

/// Everything the scenario asks of its engine beyond the seed on PostgreSQL's terms.
pub(super) fn needs(scenario: &Scenario) -> Vec<Need> {
    let mut needs = queue_needs(&scenario.queue);
    fleet_needs(scenario, &mut needs);
    needs
}

/// What the engine needs to install the queue as `[queue]` asks.
fn queue_needs(q: &crate::scenario::model::QueueSection) -> Vec<Need> {
    let variant = q.variant.as_str();
    let mut needs = vec![Need::new(
        "queue.variant",
        format!("variant {variant} runs{}", q.variant.takes()),
        move |s| s.variants.contains(&variant),
    )];
    if q.fillfactor.is_some() {
        let what = "fillfactor is a table option".to_string();
        needs.push(Need::new("queue.fillfactor", what, |s| s.table_options));
    }
    if q.unlogged {
        let what = "unlogged is a table option".to_string();
        needs.push(Need::new("queue.unlogged", what, |s| s.table_options));
    }
    if q.stale_statistics {
        let what = "the queue table has planner statistics".to_string();
        needs.push(Need::new("queue.stale_statistics", what, |s| {
            s.planner_statistics
        }));
    }
    if q.rabbitmq_queue.is_some() {
        let what = "the kind of queue is chosen".to_string();
        needs.push(Need::new("queue.rabbitmq_queue", what, |s| {
            s.own_keys.contains(&"queue.rabbitmq_queue")
        }));
    }
    if q.partitions.is_some() {
        let what = "the topics' partitions are chosen".to_string();
        needs.push(Need::new("queue.partitions", what, |s| {
            s.own_keys.contains(&"queue.partitions")
        }));
    }
    needs
}

/// What the engine needs to run for a scenario's fleets, server settings and faults.
fn fleet_needs(scenario: &Scenario, needs: &mut Vec<Need>) {
    match scenario.consumers.claim_mode {
        Some(ClaimMode::InTransaction) => {
            let what = "a claim held in the worker's transaction".to_string();
            needs.push(Need::new("consumers.claim_mode", what, |s| {
                s.claim_in_transaction
            }));
        }
        Some(ClaimMode::Committed) => {
            let what = "a claim committed before the work".to_string();
            needs.push(Need::new("consumers.claim_mode", what, |s| {
                s.claim_committed
            }));
        }
        None => {}
    }
    if scenario.bystander.enabled == Some(true) {
        let what = "a bystander runs".to_string();
        needs.push(Need::new("bystander.enabled", what, |s| s.bystander));
    }
    if scenario.verify.completion_audit == Some(true) {
        let what = "the server records each completion (the completion audit)".to_string();
        needs.push(Need::new("verify.completion_audit", what, |s| {
            s.completion_audit
        }));
    }
    if scenario.producers.outbox.enabled {
        let what = "the outbox scenario runs".to_string();
        needs.push(Need::new("producers.outbox.enabled", what, |s| s.outbox));
    }
    if !scenario.database.settings.is_empty() && scenario.database.provider == ProviderKind::Url {
        let what = "session settings on a url server are applied".to_string();
        needs.push(Need::new("database.settings", what, |s| {
            s.url_session_settings
        }));
    }
    for (i, phase) in scenario.phases.iter().enumerate() {
        for (j, f) in phase.faults.iter().enumerate() {
            let kind = f.kind();
            needs.push(Need::new(
                &format!("phases[{i}].faults[{j}].kind"),
                format!("fault {kind} runs"),
                move |s| s.faults.contains(&kind),
            ));
        }
    }
}

/// What the engine does not run, from its row of the engine table: the refusal names the
/// key, the engines that do run it, and what this engine offers instead.
pub(super) fn check_engine(scenario: &Scenario) -> Result<(), (String, String)> {
    let engine = scenario.database.engine;
    let Some(unmet) = needs(scenario)
        .into_iter()
        .find(|n| !(n.met)(engine.supports()))
    else {
        return Ok(());
    };
    let on: Vec<&str> = Engine::ALL
        .iter()
        .filter(|e| (unmet.met)(e.supports()))
        .map(|e| e.label())
        .collect();
    Err((
        unmet.key,
        format!(
            "{} on {} only; with database.engine = \"{}\" {}",
            unmet.what,
            crate::backend::engine::and_list(&on),
            engine.as_str(),
            engine.offers()
        ),
    ))
}
