//! A run as stages: set-up (install the queue in a schema of its own, prefill, ANALYZE),
//! any number of load steps on that one queue (each with its own recorder, drain, proof and
//! results), and tear-down. `run` is one step; `capacity` runs many on one queue.

use super::load::{Ended, Load, Timeline};
use super::{RunOptions, RunOutcome, default_out_dir, utc_now};
use crate::accounting::{self, EarlierSteps, ProofOptions};
use crate::clock::RunClock;
use crate::db::Conn;
use crate::db::{self, RunSchema, Server};
use crate::error::{Failure, InputError};
use crate::fleet::jobs::JobFactory;
use crate::metrics::Event;
use crate::queue::Queue;
use crate::report::{self, RunFacts, RunResults, Summary};
use crate::scenario::Plan;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const PREFILL_BATCH: usize = 5_000;

/// A queue installed and ready for load steps.
pub struct Session {
    pub(super) server: Arc<Server>,
    pub(super) schema: RunSchema,
    pub(super) queue: Queue,
    pub(super) clock: RunClock,
    started_at: String,
    server_settings: BTreeMap<String, String>,
    key_prefix: String,
    /// The set-up's prefill, handed to the first step's recorder.
    prefilled: Option<Prefilled>,
    /// Jobs of the steps already run (proved), so later proofs know their rows.
    earlier: EarlierSteps,
    steps: usize,
    /// A step ended with jobs still queued: a later step would inherit them.
    backlog_left: bool,
}

impl Session {
    /// Set-up: a schema of its own on `server`, the variant's tables (a custom one checked
    /// before any load), the outbox's orders, the prefill, ANALYZE. On failure the schema
    /// is dropped again (unless `keep`).
    pub async fn set_up(
        plan: &Plan,
        opts: &RunOptions,
        server: &Arc<Server>,
        shutdown: &CancellationToken,
    ) -> Result<Session, Failure> {
        let clock = RunClock::start();
        let started_at = utc_now();
        check_server_faults(plan, server)?;
        let schema = RunSchema::create(server.options(), "dbq_run").await?;
        match install(plan, opts, &schema, clock, shutdown).await {
            Ok((queue, server_settings, key_prefix, prefilled)) => Ok(Session {
                server: server.clone(),
                schema,
                queue,
                clock,
                started_at,
                server_settings,
                key_prefix,
                prefilled: Some(prefilled),
                earlier: EarlierSteps::default(),
                steps: 0,
                backlog_left: false,
            }),
            Err(e) => {
                schema.release();
                if !opts.keep && !server.is_owned() {
                    schema.drop_schema().await.ok();
                }
                Err(e)
            }
        }
    }

    /// The schema the queue is installed in.
    pub fn schema(&self) -> &RunSchema {
        &self.schema
    }

    /// How many steps have run.
    pub fn steps_run(&self) -> usize {
        self.steps
    }

    /// Whether a step left jobs queued (its drain timed out or was cut short): the next
    /// step's consumers would work on them, so its figures would not be its own.
    pub fn backlog_left(&self) -> bool {
        self.backlog_left
    }

    /// Unique keys of this step's jobs start with this.
    pub(super) fn key_prefix(&self) -> String {
        match self.steps {
            0 => self.key_prefix.clone(),
            n => format!("{}s{n}", self.key_prefix),
        }
    }

    /// One load step: `plan`'s phases on the installed queue, then the drain; measured,
    /// proved and written to `opts.out_dir` on their own. `plan` must be the set-up's plan
    /// or differ from it only in load (phases, producers, consumers, thresholds).
    pub async fn step(
        &mut self,
        plan: &Plan,
        opts: &RunOptions,
        shutdown: &CancellationToken,
    ) -> Result<RunOutcome, Failure> {
        let mut admin = self.schema.connect().await?;
        let claim_plan_start = self
            .queue
            .explain_claim(&mut admin)
            .await
            .context("EXPLAIN of the claim")?;
        admin.close().await.ok();
        let prefilled = self.prefilled.take().unwrap_or_default();
        let timeline = Timeline::of(plan, self.clock);
        let started_at = match self.steps {
            0 => self.started_at.clone(),
            _ => utc_now(),
        };
        if opts.status {
            eprintln!(
                "dbq-bench: load started: {} phase(s), {:.0} s",
                plan.phases.len(),
                plan.phases
                    .iter()
                    .map(|p| p.duration.as_secs_f64())
                    .sum::<f64>()
            );
        }
        let load = Load::start(self, plan, opts, &timeline, prefilled.events, shutdown);
        let ended = load.finish(plan, opts, shutdown).await?;
        self.steps += 1;
        let drained = !ended.stopped_early && !ended.drain_timed_out;
        self.backlog_left |= !drained;

        // A new connection: the load's faults may have broken older ones.
        let mut admin = self.schema.connect().await?;
        let claim_plan_end = self
            .queue
            .explain_claim(&mut admin)
            .await
            .context("EXPLAIN of the claim")?;
        let facts = RunFacts {
            provider: self.server.provider.as_str().into(),
            server_version: self.server.version.clone(),
            server_description: self.server.description.clone(),
            schema: self.schema.name.clone(),
            started_at,
            ended_at: utc_now(),
            interrupted: shutdown.is_cancelled(),
            drain_s: ended.drain_s,
            drain_timed_out: ended.drain_timed_out,
            prefilled: prefilled.count,
            variant: self.queue.variant().name.clone(),
            claim_sql: self.queue.claim_sql().trim().into(),
            claim_plan_start,
            claim_plan_end,
            server_settings: self.server_settings.clone(),
            aborted_by_threshold: ended.aborted_by_threshold.clone(),
        };
        let outcome = self.conclude(plan, opts, &mut admin, ended, facts).await;
        admin.close().await.ok();
        outcome
    }

    /// The step's proof against the table, its summary and thresholds, its results on disk.
    async fn conclude(
        &mut self,
        plan: &Plan,
        opts: &RunOptions,
        admin: &mut Conn,
        ended: Ended,
        facts: RunFacts,
    ) -> Result<RunOutcome, Failure> {
        let Ended {
            measurements,
            drain_timed_out,
            stopped_early,
            ..
        } = ended;
        let mut ledger = measurements.ledger.clone();
        let proof_options = ProofOptions {
            audit: plan.completion_audit,
            drained: !stopped_early && !drain_timed_out,
            claim_mode: plan.consumers.claim_mode,
            outbox: plan.producers.outbox.is_some(),
        };
        let proof = accounting::prove(
            admin,
            &self.queue,
            &mut ledger,
            proof_options,
            &self.earlier,
        )
        .await?;
        self.earlier.extend(&ledger);
        let mut summary = Summary::build(plan, &measurements, &ledger, proof, facts);
        summary.judge_thresholds(&plan.thresholds);
        if let Some(c) = &opts.capacity {
            summary.cite_capacity(c.clone());
        }
        let results = RunResults {
            summary,
            db_stats: report::dbstats::rows(&measurements),
            timeline: measurements.timeline,
            hlog: measurements.hlog,
            resolved_scenario: plan.resolved_toml(),
        };
        let out_dir = opts
            .out_dir
            .clone()
            .unwrap_or_else(|| default_out_dir(&plan.name));
        report::write_all(&out_dir, &results)?;
        Ok(RunOutcome {
            results,
            out_dir,
            ledger,
            kept_schema: None,
            kept_server: None,
        })
    }

    /// Tear-down: drops the schema, unless `keep` (then it is returned). A server the run
    /// owns takes its schemas with it when it is torn down, so theirs are left to it.
    pub async fn tear_down(self, keep: bool) -> Option<RunSchema> {
        self.schema.release();
        if keep {
            return Some(self.schema);
        }
        if !self.server.is_owned()
            && let Err(e) = self.schema.drop_schema().await
        {
            eprintln!("dbq-bench: warning: {e:#}");
        }
        None
    }
}

/// `restart_server` needs a server the run started.
fn check_server_faults(plan: &Plan, server: &Server) -> Result<(), InputError> {
    for (i, p) in plan.phases.iter().enumerate() {
        for (j, f) in p.faults.iter().enumerate() {
            if matches!(f, crate::scenario::FaultSpec::RestartServer { .. }) && !server.is_owned() {
                return Err(InputError::new(
                    &plan.source,
                    format!("phases[{i}].faults[{j}]"),
                    format!(
                        "restart_server needs a server the run starts (provider container or local), not {}",
                        server.provider.as_str()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The set-up stage proper: queue, server settings, a key prefix, the prefill, ANALYZE.
async fn install(
    plan: &Plan,
    opts: &RunOptions,
    schema: &RunSchema,
    clock: RunClock,
    shutdown: &CancellationToken,
) -> Result<(Queue, BTreeMap<String, String>, String, Prefilled), Failure> {
    let variant_error = |e: crate::queue::CustomError| {
        Failure::Input(InputError::new(&plan.source, "queue.dir", e.to_string()))
    };
    let queue = Queue::new(&plan.queue, schema).map_err(variant_error)?;
    let mut admin = schema.connect().await?;
    let server_settings = db::server_settings(&mut admin)
        .await
        .context("reading server settings")?;
    if plan.queue.variant.name == crate::scenario::VariantName::Custom {
        // A custom variant's schema and statements are checked before any load.
        queue
            .install(&mut admin, plan.completion_audit)
            .await
            .map_err(|e| {
                variant_error(crate::queue::CustomError {
                    file: queue.variant().file("schema.sql"),
                    reason: format!("does not run: {}", crate::queue::one_line(&e)),
                })
            })?;
        queue
            .check_statements(&mut admin)
            .await
            .map_err(variant_error)?;
    } else {
        queue
            .install(&mut admin, plan.completion_audit)
            .await
            .context("creating the queue table")?;
    }
    if let Some(outbox) = plan.producers.outbox {
        queue
            .install_outbox(&mut admin, outbox.orders)
            .await
            .context("creating the outbox's orders")?;
    }
    let key_prefix = format!("r{:06x}", rand::random::<u32>() & 0xff_ffff);
    let prefilled = prefill(
        plan,
        &queue,
        &mut admin,
        clock,
        &key_prefix,
        shutdown,
        opts.status,
    )
    .await?;
    queue
        .analyze(&mut admin)
        .await
        .context("ANALYZE of the queue table")?;
    admin.close().await.ok();
    if shutdown.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    Ok((queue, server_settings, key_prefix, prefilled))
}

/// Jobs bulk-inserted before the load, as `Enqueued` events for the recorder.
#[derive(Default)]
struct Prefilled {
    count: u64,
    events: Vec<Event>,
}

/// Ids as runs of consecutive ids: (first, length).
fn runs_of(ids: &[i64]) -> Vec<(i64, u32)> {
    let mut runs: Vec<(i64, u32)> = Vec::new();
    for &id in ids {
        match runs.last_mut() {
            Some((first, len)) if *first + i64::from(*len) == id => *len += 1,
            _ => runs.push((id, 1)),
        }
    }
    runs
}

/// Bulk-inserts `producers.prefill` jobs before the load.
async fn prefill(
    plan: &Plan,
    queue: &Queue,
    conn: &mut Conn,
    clock: RunClock,
    key_prefix: &str,
    shutdown: &CancellationToken,
    verbose: bool,
) -> Result<Prefilled> {
    let total = plan.producers.prefill as usize;
    if total > 0 && verbose {
        eprintln!("dbq-bench: prefilling {total} jobs…");
    }
    let factory = JobFactory::new(&plan.producers);
    let mut rng: rand::rngs::StdRng = rand::SeedableRng::seed_from_u64(plan.seed ^ 0xF1F1);
    let (mut count, mut events) = (0, Vec::new());
    while (count as usize) < total && !shutdown.is_cancelled() {
        let n = PREFILL_BATCH.min(total - count as usize);
        let now = clock.now_us();
        let made: Vec<_> = (0..n)
            .map(|i| {
                factory.make(
                    &mut rng,
                    format!("{key_prefix}-f-{}", count as usize + i),
                    now,
                    None,
                )
            })
            .collect();
        let jobs: Vec<_> = made.iter().map(|m| m.job.clone()).collect();
        let ids = queue
            .enqueue_batch(conn, &jobs)
            .await
            .context("prefilling the queue")?;
        count += ids.len() as u64;
        events.push(Event::Prefilled {
            runs: runs_of(&ids),
            poison: made.iter().filter(|m| m.poison).count() as u64,
            crash: made.iter().filter(|m| m.crash).count() as u64,
            sent_us: now,
            committed_us: clock.now_us(),
        });
    }
    Ok(Prefilled { count, events })
}
