//! The wait before a step's load for workers that share the queue as members of one group
//! (Kafka's consumer group). Each member joining makes the group hand every member its part
//! again, pausing them all, so workers started together keep the group unsettled for their
//! first seconds; a load scheduled from their start would measure that, not the queue. The
//! load's schedule is fixed only once the group has settled with every worker in it and
//! stayed so for [`SETTLED_FOR`], or once the wait gives up (said in the results). Engines
//! without a group are not waited for.

use crate::backend::GroupView;
use crate::fleet::registry::WorkerRegistry;
use crate::fleet::{FleetContext, sleep_or_stop};
use crate::report::GroupForming;
use crate::status::Status;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the load waits for the group: a hand-out waits up to Kafka's
/// `max.poll.interval.ms` (10 s here) for every member to rejoin, and members a previous
/// step left without a goodbye drop out after the session timeout (6 s); several of both in
/// a row fit in this.
const FORM_WITHIN: Duration = Duration::from_secs(60);
/// How long the group must stay settled with every worker before the load starts. Tansu
/// 0.6.0 describes its group `Stable` before the members fetch: a load started then found
/// every partition's first records 1.5–1.8 s late, all at once (12 and 16 members); started
/// 3 s later, none were (the same run, three seconds' pause added: at most 0.4 s in the
/// first second, 0.12 s after). An independent rdkafka load whose records started seconds
/// after the group formed saw none late either.
const SETTLED_FOR: Duration = Duration::from_secs(3);
/// How often the group's coordinator is asked.
const ASK_EVERY: Duration = Duration::from_millis(100);

/// Waits until the consumers can take the load: a library's processes have all said hello
/// (within their connect timeout, and a second), and a group of workers has formed.
pub(super) async fn await_ready(
    plan: &crate::scenario::Plan,
    ctx: &FleetContext,
    registry: &WorkerRegistry,
    status: &Status,
    stop: &CancellationToken,
) -> Option<GroupForming> {
    if let Some(w) = &plan.queue.variant.workers {
        let within = w.connect_timeout + Duration::from_secs(1);
        await_workers(registry, within, status, stop).await;
    }
    await_group(ctx, plan.consumers.count, status, stop).await
}

/// Waits until every one of a library's worker processes has said hello, or `within` has
/// passed (its supervisor gives each its connect timeout and stops the run if it does not),
/// or `stop`. An interpreter and its imports take seconds on a loaded machine: a load, and a
/// fault due in its first seconds, scheduled from the processes' start would meet no
/// worker.
async fn await_workers(
    registry: &WorkerRegistry,
    within: Duration,
    status: &Status,
    stop: &CancellationToken,
) {
    let all_said_hello = || (0..registry.len() as u32).all(|s| registry.pid(s) > 0);
    if all_said_hello() {
        return;
    }
    status.line(&format!(
        "waiting for {} library worker(s) to say hello",
        registry.len()
    ));
    let deadline = tokio::time::Instant::now() + within;
    while !all_said_hello() && tokio::time::Instant::now() < deadline {
        if !sleep_or_stop(Duration::from_millis(50), stop).await {
            return;
        }
    }
}

/// Waits until the workers' group has settled with `expected` members, or [`FORM_WITHIN`]
/// has passed, or `stop`; `None` where the engine has no group.
async fn await_group(
    ctx: &FleetContext,
    expected: usize,
    status: &Status,
    stop: &CancellationToken,
) -> Option<GroupForming> {
    let started_us = ctx.clock.now_us();
    // Unreachable now, the workers say so themselves: the load is not held for it.
    let mut link = ctx.backend.connect("group").await.ok()?;
    if link.group().is_none() {
        link.close().await;
        return None;
    }
    status.line(&format!(
        "waiting for the workers' group to form ({expected} members)"
    ));
    let mut last = GroupView {
        state: "not described yet".into(),
        settled: false,
        members: 0,
    };
    let waited = || (ctx.clock.now_us() - started_us) as f64 / 1e6;
    let (mut settling, mut settled) = (Settling::default(), false);
    while waited() < FORM_WITHIN.as_secs_f64() {
        let Some(group) = link.group() else { break };
        match group.describe_group().await {
            Ok(view) => last = view,
            Err(e) => last.state = format!("not described: {e}"),
        }
        settled = settling.observe(last.formed(expected), waited());
        if settled || !sleep_or_stop(ASK_EVERY, stop).await {
            break;
        }
    }
    link.close().await;
    if stop.is_cancelled() {
        return None;
    }
    let forming = GroupForming {
        expected,
        members: last.members,
        formed: settled,
        formed_s: settling.formed_at,
        state: last.state,
        waited_s: waited(),
    };
    match forming.formed {
        true => status.line(&forming.sentence()),
        false => status.warn(&forming.sentence()),
    }
    Some(forming)
}

/// The group's settling as it is observed: when it last became formed.
#[derive(Default)]
struct Settling {
    formed_at: Option<f64>,
}

impl Settling {
    /// The group seen `formed` or not at `now_s`: whether it has stayed formed for
    /// [`SETTLED_FOR`] (a group seen unformed starts again).
    fn observe(&mut self, formed: bool, now_s: f64) -> bool {
        self.formed_at = match formed {
            true => self.formed_at.or(Some(now_s)),
            false => None,
        };
        self.formed_at
            .is_some_and(|at| now_s - at >= SETTLED_FOR.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_settled_only_after_staying_formed_and_starts_again_when_it_changes() {
        let hold = SETTLED_FOR.as_secs_f64();
        let mut s = Settling::default();
        assert!(!s.observe(false, 0.5));
        assert!(!s.observe(true, 1.0));
        assert!(!s.observe(true, 1.0 + hold - 0.1));
        // A member joined (or left): the group hands out parts again.
        assert!(!s.observe(false, 1.0 + hold));
        assert!(!s.observe(true, 2.0 + hold));
        assert!(!s.observe(true, 2.0 + 2.0 * hold - 0.1));
        assert!(s.observe(true, 2.0 + 2.0 * hold));
        assert_eq!(s.formed_at, Some(2.0 + hold));
    }
}
