//! The answer from the steps and the confirmation: the figures of `capacity.json` and the
//! one sentence every format gives, which says over what time horizon the answer holds.

use super::confirm::Confirmation;
use super::stability::Stability;
use super::{Capacity, CapacityRequest, End, Step, best_rate, objective_text};
use crate::report::design::DesignRecord;
use crate::report::{article, capitalised};
use crate::scenario::{HumanDuration, Plan};

/// The answer from the search's steps and, when it ran, the confirmation.
pub(super) fn conclude(
    request: &CapacityRequest,
    plan: &Plan,
    design: Option<DesignRecord>,
    steps: Vec<Step>,
    end: End,
    confirmation: Option<Confirmation>,
) -> Capacity {
    let between_vacuums = best_rate(&steps);
    let first_failing = first_failing(&steps);
    let limited = steps.iter().any(|s| s.load_generator_limited);
    let variant = plan.queue.variant.name.as_str().to_string();
    let named = design
        .as_ref()
        .map_or_else(|| format!("the {variant} design"), DesignRecord::phrase);
    let objective = objective_text(&request.search);
    let (stepped, min_consumers) = consumer_counts(request, &steps, confirmation.as_ref());
    let answer = Answer {
        design: named,
        objective,
        between_vacuums,
        first_failing,
        limited,
        measure: request.search.measure,
    };
    let summary = match request.search.consumers_for_rate {
        Some(rate) => consumers_sentence(&answer, rate, (stepped, min_consumers), &steps),
        None => match &confirmation {
            Some(c) => answer.confirmed(c),
            None => answer.unconfirmed(request.search.start_per_s),
        },
    } + &scanned_note(&steps, confirmation.as_ref());
    let machine_limited = end == End::LoadMachine
        || confirmation
            .as_ref()
            .is_some_and(|c| c.load_machine_limited);
    let max_sustainable = max_sustainable(confirmation.as_ref(), between_vacuums);
    let stability = confirmation.as_ref().and_then(Stability::of);
    let summary = summary
        + &stability
            .as_ref()
            .map_or(String::new(), Stability::sentence);
    let limit = super::limit::of_answer(max_sustainable, &steps, confirmation.as_ref());
    let summary = summary + &limit.as_ref().map_or(String::new(), |l| l.sentence());
    let mut capacity = Capacity {
        schema_version: 1,
        scenario: request.plan.source.clone(),
        variant,
        design,
        server: None,
        max_sustainable_per_s: max_sustainable,
        confirmed: confirmation
            .as_ref()
            .is_some_and(|c| c.confirmed_per_s().is_some()),
        between_vacuums_per_s: between_vacuums,
        first_failing_per_s: first_failing,
        knee_per_s: knee(&steps),
        load_generator_limited: limited,
        load_machine_limited: machine_limited,
        limit,
        budget_spent: end == End::BudgetSpent,
        interrupted: end == End::Interrupted,
        backlog_left: end == End::BacklogLeft,
        min_consumers,
        search: request.search.clone(),
        steps,
        confirmation,
        at: None,
        stability,
        summary,
    };
    capacity.summary += &capacity.stalls_sentence();
    if capacity.interrupted {
        capacity.withhold_the_answer();
    }
    capacity
}

/// The lowest offered rate of a step that failed with nothing disturbing it.
fn first_failing(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .filter(|s| !s.passed && !s.disturbed)
        .map(|s| s.offered_per_s)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))))
}

/// The answer's rate: the confirmed one (or, where the load machine limited the
/// confirmation, what it screened), else the search's best between vacuums.
fn max_sustainable(
    confirmation: Option<&Confirmation>,
    between_vacuums: Option<f64>,
) -> Option<f64> {
    match confirmation {
        Some(c) if c.load_machine_limited => c.confirmed_per_s().or_else(|| c.screened_per_s()),
        Some(c) => c.confirmed_per_s(),
        None => between_vacuums,
    }
}

impl Capacity {
    /// An interrupted search or confirmation states no capacity: what finished is kept
    /// (steps, tries), the answer's figures are withdrawn and the sentence says why.
    fn withhold_the_answer(&mut self) {
        let best = self.max_sustainable_per_s.or(self.between_vacuums_per_s);
        let so_far = best.map_or(
            " No step that finished met the objective.".to_string(),
            |r| format!(" The steps that finished met the objective up to {r:.0} jobs/s (not a capacity: unjudged past there, and unconfirmed)."),
        );
        self.max_sustainable_per_s = None;
        self.min_consumers = None;
        self.confirmed = false;
        self.summary =
            format!("Interrupted (Ctrl-C) before the search ended: no capacity is stated.{so_far}");
    }
}

/// The answer of `--at`: whether the rate held on every fresh queue it was tried on.
pub(super) fn at_rate(
    request: &CapacityRequest,
    plan: &Plan,
    design: Option<DesignRecord>,
    confirmation: Confirmation,
    interrupted: bool,
) -> Capacity {
    let rate = request.search.at_rate.unwrap_or(0.0);
    let runs = request.search.at_runs;
    let held = confirmation.tries.iter().filter(|t| t.held).count() as u32;
    let all = held == runs;
    let variant = plan.queue.variant.name.as_str().to_string();
    let named = design
        .as_ref()
        .map_or_else(|| format!("the {variant} design"), DesignRecord::phrase);
    let summary = at_sentence(
        &named,
        &objective_text(&request.search),
        &confirmation,
        (rate, runs, held),
        interrupted,
    ) + &scanned_note(&[], Some(&confirmation));
    let stability = Stability::of(&confirmation);
    let summary = summary
        + &stability
            .as_ref()
            .map_or(String::new(), Stability::sentence);
    let limit = super::limit::of_answer(all.then_some(rate), &[], Some(&confirmation));
    let summary = summary + &limit.as_ref().map_or(String::new(), |l| l.sentence());
    let mut capacity = Capacity {
        schema_version: 1,
        scenario: request.plan.source.clone(),
        variant,
        design,
        server: None,
        max_sustainable_per_s: all.then_some(rate),
        confirmed: all,
        between_vacuums_per_s: None,
        first_failing_per_s: (!all).then_some(rate),
        knee_per_s: None,
        load_generator_limited: false,
        load_machine_limited: confirmation.load_machine_limited,
        limit,
        budget_spent: false,
        interrupted,
        backlog_left: false,
        min_consumers: None,
        search: request.search.clone(),
        steps: Vec::new(),
        at: Some(super::AtRate { rate, runs, held }),
        confirmation: Some(confirmation),
        stability,
        summary,
    };
    capacity.summary += &capacity.stalls_sentence();
    if interrupted
        && capacity
            .confirmation
            .as_ref()
            .is_some_and(|c| (c.tries.len() as u32) < runs)
    {
        capacity.withhold_the_answer();
    }
    capacity
}

/// "The seed design … holds 600 jobs/s …: it held on 3 of 3 fresh queues …".
fn at_sentence(
    design: &str,
    objective: &str,
    c: &Confirmation,
    (rate, runs, held): (f64, u32, u32),
    interrupted: bool,
) -> String {
    let design = capitalised(design);
    let held_for = HumanDuration(std::time::Duration::from_secs_f64(c.held_for_s));
    let judged: Vec<&super::confirm::Try> = c.tries.iter().filter(|t| !t.disturbed).collect();
    let tried = judged.len();
    let broken: Vec<String> = judged
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.held)
        .map(|(i, t)| format!("queue {}: {}", i + 1, first_broken(t)))
        .collect();
    let cut = if interrupted && (tried as u32) < runs {
        format!(" Interrupted after {tried} of {runs}.")
    } else {
        String::new()
    };
    if held == runs {
        format!(
            "{design} holds {rate:.0} jobs/s with {objective} on this server: it held on {held} of {runs} fresh queues for {held_for} each ({}): {}.",
            c.basis,
            article::multiple(rate)
        )
    } else {
        format!(
            "{design} does not hold {rate:.0} jobs/s with {objective} on every fresh queue: it held on {held} of {runs} for {held_for} each ({}); {}.{cut}",
            c.basis,
            broken.join("; ")
        )
    }
}

/// Where the workers' statements scanned the queue table (steps, and confirmation windows
/// as `try.window`): those figures measure that plan, not the queue. Empty when none did.
fn scanned_note(steps: &[Step], c: Option<&Confirmation>) -> String {
    let mut places: Vec<String> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.upkeep.table_scanned)
        .map(|(i, _)| format!("step {}", i + 1))
        .collect();
    for (i, t) in c.map_or(&[][..], |c| &c.tries[..]).iter().enumerate() {
        let windows = t
            .windows
            .iter()
            .chain(t.hold.iter().flat_map(|h| &h.windows));
        places.extend(
            windows
                .enumerate()
                .filter(|(_, w)| w.upkeep.table_scanned)
                .map(|(j, _)| format!("try {} window {}", i + 1, j + 1)),
        );
    }
    match places.is_empty() {
        true => String::new(),
        false => format!(
            " The workers' statements scanned the queue table sequentially in {}: those figures measure that plan, not the queue (table_reads in each run's summary.json).",
            places.join(", ")
        ),
    }
}

/// The rate at which p99 starts climbing: the first step whose p99 is more than twice the
/// lowest step's.
fn knee(steps: &[Step]) -> Option<f64> {
    let mut by_rate: Vec<&Step> = steps
        .iter()
        .filter(|s| s.e2e_p99_ms.is_finite() && !s.disturbed)
        .collect();
    by_rate.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
    let low = by_rate.first()?;
    by_rate
        .iter()
        .find(|s| s.e2e_p99_ms > 2.0 * low.e2e_p99_ms.max(1.0))
        .map(|s| s.offered_per_s)
}

/// What a rate search's sentence is made of.
struct Answer {
    design: String,
    objective: String,
    between_vacuums: Option<f64>,
    first_failing: Option<f64>,
    limited: bool,
    measure: std::time::Duration,
}

impl Answer {
    /// The search's figure and what it is: short steps on one aged queue.
    fn searched(&self, m: f64) -> String {
        format!(
            "{m:.0} jobs/s in {} steps on one queue between vacuums{}",
            HumanDuration(self.measure),
            self.first_failing
                .map_or(String::new(), |f| format!(", {f:.0} jobs/s broke it"))
        )
    }

    /// The answer of a search whose figure was confirmed on a fresh queue (or was not).
    fn confirmed(&self, c: &Confirmation) -> String {
        let design = capitalised(&self.design);
        let objective = &self.objective;
        let held = HumanDuration(std::time::Duration::from_secs_f64(c.held_for_s));
        let searched = self
            .between_vacuums
            .map_or(String::new(), |m| self.searched(m));
        let last = c.tries.last();
        match c.confirmed_per_s() {
            Some(r) => format!(
                "{design} sustains {r:.0} jobs/s with {objective} on this server, held for {held} on {} ({}){}: {}. The search found {searched}{}.{}",
                match c.runs {
                    1 => "a fresh queue".to_string(),
                    k => format!("each of {k} fresh queues"),
                },
                c.basis,
                if c.hold_horizon_s.is_some() {
                    " and then with the xmin horizon held"
                } else {
                    ""
                },
                article::multiple(r),
                self.stepped_down(c, r),
                c.tries
                    .iter()
                    .find(|t| t.held)
                    .and_then(|t| t.hold.as_ref())
                    .map_or(String::new(), |h| format!(" {}", h.sentence()))
            ),
            None => match last {
                Some(t) => format!(
                    "{design} met {objective} at {searched}, but no rate held for {held} on a fresh queue ({}): {} did not hold, {}. From a fresh table its capacity is below {:.0} jobs/s.",
                    c.basis,
                    offered(c, t),
                    first_broken(t),
                    t.rate
                ),
                None => format!(
                    "{design} met {objective} at {searched}; the confirmation on a fresh queue was interrupted (unconfirmed)."
                ),
            },
        }
    }

    /// Why the confirmed rate is below the search's: the tries that did not hold.
    fn stepped_down(&self, c: &Confirmation, confirmed: f64) -> String {
        let broken: Vec<String> = c
            .tries
            .iter()
            .filter(|t| !t.held)
            .map(|t| format!("{} did not hold ({})", offered(c, t), first_broken(t)))
            .collect();
        match (broken.is_empty(), self.between_vacuums) {
            (false, Some(_)) => format!(
                "; on a fresh queue {}, so it stepped down to {confirmed:.0}",
                broken.join("; ")
            ),
            _ => String::new(),
        }
    }

    /// The answer of a search that was not confirmed (`--quick`, or `capacity.confirm = "off"`).
    fn unconfirmed(&self, start: f64) -> String {
        let design = capitalised(&self.design);
        let objective = &self.objective;
        match self.between_vacuums {
            Some(m) if self.limited => format!(
                "{design} sustained {m:.0} jobs/s ({objective}) before the load generator fell behind its schedule: the harness, not the queue, was the limit, so the queue's capacity is at least that ({}; unconfirmed: {} steps on one queue between vacuums).",
                article::multiple(m),
                HumanDuration(self.measure)
            ),
            Some(m) => format!(
                "{design} sustains {m:.0} jobs/s with {objective} on this server, {}{}. Unconfirmed: a capacity between vacuums ({} steps on one queue); without --quick the rate is held on a fresh queue through autovacuum cycles.",
                article::multiple(m),
                self.first_failing.map_or(String::new(), |f| format!(
                    "; {f:.0} jobs/s broke the objective"
                )),
                HumanDuration(self.measure)
            ),
            None => format!(
                "{design} did not meet the objective ({objective}) even at {start:.0} jobs/s."
            ),
        }
    }
}

/// What a try offered: "612 jobs/s", or for a screen "612 jobs/s for the first 60 s".
fn offered(c: &Confirmation, t: &super::confirm::Try) -> String {
    match t.screen {
        true => format!("{:.0} jobs/s for the first {:.0} s", t.rate, c.screen_s),
        false => format!("{:.0} jobs/s", t.rate),
    }
}

/// The first window of a try that broke the objective, and why.
fn first_broken(t: &super::confirm::Try) -> String {
    let held = t.hold.as_ref().map_or(&[][..], |h| &h.windows[..]);
    let settled = t.windows.first().is_some_and(|w| w.passed);
    if let Some(u) = t.upset.as_ref().filter(|u| !u.recovered && settled) {
        return format!("it did not recover from the upset: {}", u.sentence());
    }
    if let (Some(i @ 1..), Some(_)) = (t.windows.iter().position(|w| !w.passed), &t.upset) {
        return format!(
            "window {} (after the upset): {}",
            i + 1,
            t.windows[i].why.join("; ")
        );
    }
    match (
        t.windows.iter().position(|w| !w.passed),
        held.iter().position(|w| !w.passed),
    ) {
        (Some(i), _) => format!(
            "window {} ({:.0}–{:.0} s): {}",
            i + 1,
            t.window_s * i as f64,
            t.window_s * (i + 1) as f64,
            t.windows[i].why.join("; ")
        ),
        (None, Some(i)) => format!(
            "with the xmin horizon held, window {}: {}",
            i + 1,
            held[i].why.join("; ")
        ),
        (None, None) => "its accounting proof failed".into(),
    }
}

/// The answer of a consumer-count search.
/// A consumer-count search's fewest consumers that met the objective in its steps, and its
/// answer: the count its confirmation held with (the steps' fewest where it did not run).
fn consumer_counts(
    request: &CapacityRequest,
    steps: &[Step],
    confirmation: Option<&Confirmation>,
) -> (Option<u32>, Option<u32>) {
    let searched = request.search.consumers_for_rate.is_some();
    let passed = steps.iter().filter(|s| s.passed && searched);
    let stepped = passed.map(|s| s.consumers).min();
    match confirmation {
        Some(c) if searched => (stepped, confirmed_count(c)),
        _ => (stepped, stepped),
    }
}

/// The consumers of a confirmation's tries when every one held, else none.
fn confirmed_count(c: &Confirmation) -> Option<u32> {
    let all_held = !c.tries.is_empty() && c.tries.iter().all(|t| t.held);
    let count = c.tries.first()?.windows.first()?.consumers;
    all_held.then_some(count)
}

fn consumers_sentence(
    a: &Answer,
    rate: f64,
    (stepped, min): (Option<u32>, Option<u32>),
    steps: &[Step],
) -> String {
    let (design, objective) = (&a.design, &a.objective);
    let most_failing = steps
        .iter()
        .filter(|s| !s.passed)
        .map(|s| s.consumers)
        .max();
    match (stepped, min) {
        (Some(s), Some(n)) => format!(
            "At {rate:.0} jobs/s {design} needs {n} consumer(s) for {objective}{}{}.",
            match s < n {
                true => format!(
                    " ({s} met it in the search's steps but fell behind in the confirmation)"
                ),
                false => String::new(),
            },
            most_failing.map_or(String::new(), |f| format!("; {f} did not meet it"))
        ),
        (Some(s), None) => format!(
            "At {rate:.0} jobs/s {design} did not hold {objective} through the confirmation with the counts tried from {s} consumer(s), the fewest that met it in the search's steps."
        ),
        _ => format!(
            "At {rate:.0} jobs/s {design} did not meet {objective} with up to {} consumer(s).",
            most_failing.unwrap_or(0)
        ),
    }
}
