//! The search itself: steps offered on one installed queue, doubling until one breaks the
//! objective, then bisecting to the precision; each step run, judged and recorded. The types
//! of the search and its answer are the parent's; this file only walks the rates.

use super::*;

/// What the search found, and what the confirmation needs of it.
pub(super) struct Searched {
    pub(super) steps: Vec<Step>,
    pub(super) end: End,
    pub(super) design: Option<DesignRecord>,
    /// The server's settings, which set how long `auto` confirms.
    pub(super) server_settings: BTreeMap<String, String>,
}

/// The search on one queue of `server`, installed for it and dropped after. A consumer-count
/// search whose step left a backlog goes on with its next step on a fresh queue: too few
/// workers are an answer about workers, not the end of the search.
pub(super) async fn search_on(
    request: &CapacityRequest,
    first: &Plan,
    server: &std::sync::Arc<crate::provider::Server>,
    shutdown: &CancellationToken,
) -> Result<Searched, Failure> {
    let status = &request.status;
    let opts = RunOptions {
        status: status.clone(),
        ..RunOptions::default()
    };
    let mut session = Session::set_up(first, &opts, server, shutdown).await?;
    let design = DesignRecord::of(&crate::run::setup_of(first), session.backend().design());
    let server_settings = session.server_settings().clone();
    let mut walk = Walk::new(request);
    loop {
        let result = walk.go(request, &mut session, shutdown).await;
        session.tear_down(false, status).await;
        match result? {
            End::FreshQueue => {
                status.line("  its backlog did not drain: the next step runs on a fresh queue");
                session = Session::set_up(first, &opts, server, shutdown).await?;
            }
            end => {
                return Ok(Searched {
                    steps: walk.steps,
                    end,
                    design: Some(design),
                    server_settings,
                });
            }
        }
    }
}

/// The highest offered rate whose step met the objective.
pub(super) fn best_rate(steps: &[Step]) -> Option<f64> {
    steps
        .iter()
        .filter(|s| s.passed)
        .map(|s| s.offered_per_s)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))
}

/// Why the search ended, if not by reaching its precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Done,
    BudgetSpent,
    Interrupted,
    /// A step's backlog did not drain: later steps would have measured it.
    BacklogLeft,
    /// The load machine stalled in a step and again each time it was measured again.
    LoadMachine,
    /// A consumer-count step left a backlog: the search goes on on a fresh queue (never the
    /// end of a search).
    FreshQueue,
}

/// How many times a step (or a confirmation's try) broken by a stall of the load machine is
/// measured again before the answer says the load machine limited the measurement.
pub const REMEASURES: u32 = 2;

/// Where the search is: its steps so far, its bounds and its next setting.
pub(super) struct Walk {
    steps: Vec<Step>,
    bounds: Bounds,
    at: Setting,
    remeasured: u32,
    started: Instant,
}

impl Walk {
    fn new(request: &CapacityRequest) -> Walk {
        Walk {
            steps: Vec::new(),
            bounds: Bounds::default(),
            at: request.first(),
            remeasured: 0,
            started: Instant::now(),
        }
    }

    /// Ramp, then bisect, on `session`'s queue until the search ends (or needs a fresh
    /// queue); the steps accumulate in the walk.
    async fn go(
        &mut self,
        request: &CapacityRequest,
        session: &mut Session,
        shutdown: &CancellationToken,
    ) -> Result<End, Failure> {
        let consumer_search = request.search.consumers_for_rate.is_some();
        loop {
            if shutdown.is_cancelled() {
                return Ok(End::Interrupted);
            }
            if self.started.elapsed() >= request.search.budget {
                return Ok(End::BudgetSpent);
            }
            let index = self.steps.len();
            let step = match run_step(request, session, index, self.at, shutdown).await {
                // An interrupted step is not judged; the finished ones still answer.
                Err(Failure::Interrupted) => return Ok(End::Interrupted),
                Ok(_) if shutdown.is_cancelled() => return Ok(End::Interrupted),
                other => other?,
            };
            let (limited, disturbed, passed) =
                (step.load_generator_limited, step.disturbed, step.passed);
            if !disturbed {
                self.bounds.record(&step, consumer_search);
            }
            self.steps.push(step);
            if session.backlog_left() && !consumer_search {
                return Ok(End::BacklogLeft);
            }
            if disturbed {
                // Not the queue's failure: the same setting again, a bounded number of times.
                self.remeasured += 1;
                if self.remeasured > REMEASURES {
                    return Ok(End::LoadMachine);
                }
                if session.backlog_left() {
                    return Ok(End::FreshQueue);
                }
                continue;
            }
            self.remeasured = 0;
            if limited && !consumer_search {
                // The harness cannot send more: searching higher would measure the harness.
                return Ok(End::Done);
            }
            let Some(next) = self.next(request) else {
                return Ok(End::Done);
            };
            self.at = next;
            if session.backlog_left() {
                return Ok(End::FreshQueue);
            }
            if !passed {
                // The next step starts from what a vacuum leaves, not from this one's dead rows.
                session.clean_up().await?;
            }
        }
    }

    /// The next setting, `None` once the search has its answer.
    fn next(&self, request: &CapacityRequest) -> Option<Setting> {
        match request.search.consumers_for_rate {
            Some(rate) => self
                .bounds
                .next_consumers(request.search.max_consumers)
                .map(|n| Setting {
                    rate,
                    consumers: Some(n),
                }),
            None => self
                .bounds
                .next_rate(&request.search, self.steps.len())
                .map(|rate| Setting {
                    rate,
                    consumers: None,
                }),
        }
    }
}

/// The search's bounds so far: rates (or consumer counts) known good and known bad.
#[derive(Debug, Default)]
pub(super) struct Bounds {
    good: Option<f64>,
    bad: Option<f64>,
}

impl Bounds {
    /// A rate search keeps the highest good and lowest bad rate; a consumer search the
    /// fewest consumers that were enough and the most that were not.
    fn record(&mut self, step: &Step, consumers: bool) {
        let x = match consumers {
            true => step.consumers as f64,
            false => step.offered_per_s,
        };
        let (slot, keep_higher) = match (step.passed, consumers) {
            (true, false) => (&mut self.good, true),
            (false, false) => (&mut self.bad, false),
            (true, true) => (&mut self.good, false),
            (false, true) => (&mut self.bad, true),
        };
        *slot = Some(slot.map_or(x, |v| if keep_higher { v.max(x) } else { v.min(x) }));
    }

    /// Doubles until a rate breaks the objective, then bisects to the precision.
    fn next_rate(&self, s: &Search, steps: usize) -> Option<f64> {
        match (self.good, self.bad) {
            (Some(g), None) if g * 2.0 <= s.max_per_s => Some(g * 2.0),
            (Some(g), None) if g < s.max_per_s => Some(s.max_per_s),
            (None, Some(b)) if b / 2.0 >= 1.0 && steps < 3 => Some(b / 2.0),
            (Some(g), Some(b)) if (b - g) / g > s.precision => Some(((g + b) / 2.0).round()),
            _ => None,
        }
    }

    /// Doubles the consumers until the objective holds (or halves them while it holds),
    /// then bisects to one consumer.
    fn next_consumers(&self, max: u32) -> Option<u32> {
        match (self.good, self.bad) {
            (None, Some(b)) if b < max as f64 => Some(((b * 2.0) as u32).min(max)),
            (Some(g), None) if g > 1.0 => Some((g / 2.0).floor() as u32),
            (Some(g), Some(b)) if g - b > 1.0 => Some(((g + b) / 2.0).floor() as u32),
            _ => None,
        }
    }
}

pub(super) async fn run_step(
    request: &CapacityRequest,
    session: &mut Session,
    index: usize,
    at: Setting,
    shutdown: &CancellationToken,
) -> Result<Step, Failure> {
    let plan = request.step_plan(at)?;
    let consumers = plan.consumers.count;
    let name = match at.consumers {
        Some(n) => format!("{:02}-{n}-consumers", index + 1),
        None => format!("{:02}-{}-per-s", index + 1, at.rate.round()),
    };
    let dir = request.out_dir.join("steps").join(name);
    request.status.line(&format!(
        "capacity step {}: {} jobs/s offered to {consumers} consumer(s)",
        index + 1,
        at.rate.round()
    ));
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        ..Default::default()
    };
    let outcome = session.step(&plan, &opts, shutdown).await?;
    let step = judge(&outcome.results.summary, at.rate, consumers as u32, dir);
    request.status.line(&format!("  {}", step.line()));
    Ok(step)
}

/// Judges a step's measured window (its one measured phase); see [`judge_phase`].
pub fn judge(s: &Summary, rate: f64, consumers: u32, dir: PathBuf) -> Step {
    match s.phases.iter().find(|p| p.measured) {
        Some(p) => judge_phase(s, p, rate, consumers, dir),
        None => Step {
            offered_per_s: rate,
            consumers,
            completed_per_s: 0.0,
            e2e_p50_ms: f64::NAN,
            e2e_p99_ms: f64::NAN,
            backlog_slope_per_s: f64::NAN,
            sent_late_pct: 0.0,
            passed: false,
            why: vec!["the step did not run its measured window".into()],
            load_generator_limited: false,
            upkeep: Upkeep::default(),
            limit: None,
            disturbed: false,
            dir,
        },
    }
}

/// Judges one measured phase of a run: its thresholds (the objective), whether the
/// producers delivered the offered rate, and whether completions kept up with what they
/// sent. Late inserts are not a failure by themselves: latency counts from each job's
/// intended time, so lateness already shows in the e2e objective.
pub fn judge_phase(
    s: &Summary,
    p: &summary::PhaseSummary,
    rate: f64,
    consumers: u32,
    dir: PathBuf,
) -> Step {
    let mut why: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.passed && t.phase.as_deref().is_none_or(|name| name == p.name))
        .map(|t| {
            format!(
                "{} {} (was {})",
                t.metric,
                t.condition,
                t.actual.map_or("n/a".into(), |a| format!("{a:.1}"))
            )
        })
        .collect();
    let objective_met = why.is_empty();
    let c = &p.jobs;
    let window = p.duration_s.max(1e-9);
    let gap = c.enqueued as f64 - (c.completed + c.dead_lettered) as f64;
    let in_flight =
        verdict::jobs_in_flight(p.throughput.completed_per_s, p.latency_ms.end_to_end.p50);
    let consumers_kept_up =
        verdict::completions_kept_up(c.enqueued, c.completed + c.dead_lettered, in_flight);
    let sent_share = sent_share(c.enqueued, c.dropped, c.enqueue_errors);
    let delivered = sent_share >= 0.97;
    if !consumers_kept_up {
        why.push(format!("backlog grew by {:.0} jobs/s", gap / window));
    }
    if !delivered {
        why.push(format!(
            "producers sent only {:.0}% of the offered jobs",
            sent_share * 100.0
        ));
    }
    if !s.accounting.sound {
        why.push("the accounting proof failed".into());
    }
    let passed = why.is_empty();
    let limit = p.limit.as_ref().map(|l| l.rejudged(!passed));
    Step {
        offered_per_s: rate,
        consumers,
        completed_per_s: p.throughput.completed_per_s,
        e2e_p50_ms: p.latency_ms.end_to_end.p50,
        e2e_p99_ms: p.latency_ms.end_to_end.p99,
        backlog_slope_per_s: gap / window,
        sent_late_pct: 100.0 * c.sent_late as f64 / p.latency_ms.schedule_lag.count.max(1) as f64,
        passed,
        // Only the producers fell short: the consumers finished what was sent in time.
        load_generator_limited: !delivered && consumers_kept_up && objective_met,
        why,
        upkeep: Upkeep::of(s, p),
        // A proof that failed is the queue's, whatever else happened.
        disturbed: s.accounting.sound && limit.as_ref().is_some_and(|l| stall_decided(s, p, l)),
        limit,
        dir,
    }
}

/// The load machine stalled in the window, and the stalls decided it: every threshold the
/// window broke is a latency that its seconds away from the stalls kept (a window that broke
/// there too, or broke a threshold a stall cannot move, is the queue's).
fn stall_decided(s: &Summary, p: &summary::PhaseSummary, limit: &Limit) -> bool {
    let Some(away) = limit.figures.away_from_stalls.filter(|_| limit.disturbed()) else {
        return false;
    };
    s.thresholds
        .iter()
        .filter(|t| !t.passed && t.phase.as_deref().is_none_or(|name| name == p.name))
        .all(|t| {
            let threshold = crate::thresholds::parse(&t.metric, &t.condition, Some("step"));
            match (threshold, away.figure(&t.metric)) {
                (Ok(threshold), Some(figure)) => threshold.op.holds(figure, threshold.limit),
                _ => false,
            }
        })
}

/// The share of the producers' own schedule they sent: measured against what they drew, not
/// rate × window, since a Poisson schedule draws its count (at 100/s over 10 s, ±3% is one
/// standard deviation) and a low draw is not the generator falling short.
fn sent_share(enqueued: u64, dropped: u64, enqueue_errors: u64) -> f64 {
    enqueued as f64 / ((enqueued + dropped + enqueue_errors) as f64).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_producers_share_is_of_their_own_schedule() {
        // A Poisson draw of 960 jobs at 100/s over 10 s, all sent: delivered.
        assert_eq!(sent_share(960, 0, 0), 1.0);
        // A schedule the producers could not keep: what their phase ended on is short.
        assert!(sent_share(900, 100, 0) < 0.97);
        assert!(sent_share(900, 0, 100) < 0.97);
        assert_eq!(sent_share(0, 0, 0), 0.0);
    }

    fn step(rate: f64, consumers: u32, passed: bool) -> Step {
        Step {
            offered_per_s: rate,
            consumers,
            completed_per_s: rate,
            e2e_p50_ms: 1.0,
            e2e_p99_ms: 2.0,
            backlog_slope_per_s: 0.0,
            sent_late_pct: 0.0,
            passed,
            why: vec![],
            load_generator_limited: false,
            upkeep: Upkeep::default(),
            limit: None,
            disturbed: false,
            dir: PathBuf::new(),
        }
    }

    /// Plays a search against a queue that carries `capacity` jobs/s; returns the rates tried.
    fn rate_search(capacity: f64) -> Vec<f64> {
        let s = Search::default();
        let (mut b, mut rate, mut tried) = (Bounds::default(), s.start_per_s, vec![]);
        loop {
            tried.push(rate);
            b.record(&step(rate, 8, rate <= capacity), false);
            match b.next_rate(&s, tried.len()) {
                Some(r) => rate = r,
                None => return tried,
            }
        }
    }

    #[test]
    fn the_rate_search_doubles_then_bisects_to_the_precision() {
        assert_eq!(
            rate_search(700.0),
            [100.0, 200.0, 400.0, 800.0, 600.0, 700.0, 750.0]
        );
        // Not even the first rate: halved twice, then it gives up.
        assert_eq!(rate_search(10.0), [100.0, 50.0, 25.0]);
    }

    #[test]
    fn the_consumer_search_doubles_then_bisects_to_one_consumer() {
        let play = |needed: u32| {
            let (mut b, mut n, mut tried) = (Bounds::default(), 1, vec![]);
            loop {
                tried.push(n);
                b.record(&step(60.0, n, n >= needed), true);
                match b.next_consumers(64) {
                    Some(next) => n = next,
                    None => return (tried, b.good),
                }
            }
        };
        assert_eq!(play(5), (vec![1, 2, 4, 8, 6, 5], Some(5.0)));
        assert_eq!(play(1), (vec![1], Some(1.0)));
        assert_eq!(play(100), (vec![1, 2, 4, 8, 16, 32, 64], None));
    }

    #[test]
    fn a_consumer_search_from_littles_law_halves_while_it_holds_then_bisects() {
        let play = |start: u32, needed: u32| {
            let (mut b, mut n, mut tried) = (Bounds::default(), start, vec![]);
            loop {
                tried.push(n);
                b.record(&step(1500.0, n, n >= needed), true);
                match b.next_consumers(64) {
                    Some(next) => n = next,
                    None => return (tried, b.good),
                }
            }
        };
        assert_eq!(play(38, 32), (vec![38, 19, 28, 33, 30, 31, 32], Some(32.0)));
        assert_eq!(play(38, 50), (vec![38, 64, 51, 44, 47, 49, 50], Some(50.0)));
        assert_eq!(
            super::super::littles_law(1500.0, Duration::from_millis(20), 64),
            38
        );
        assert_eq!(
            super::super::littles_law(10.0, Duration::from_millis(1), 64),
            1
        );
    }
}
