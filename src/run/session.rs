//! A run as stages: set-up (install the queue in a namespace of its own, prefill, ANALYZE of
//! a prefilled table, never of an empty one: an empty table is analyzed a second into the
//! first step's load and again each time it doubles), any number of load steps on that one queue (each with its own
//! recorder, drain, proof and results), and tear-down. `run` is one step; `capacity` runs many on one queue.

use super::load::{Ended, Load};
use super::timeline::LoadTarget;
use super::{RunOptions, RunOutcome, default_out_dir, utc_now};
use crate::accounting::{self, EarlierSteps};
use crate::backend::{self, Backend, InstallError, Link};
use crate::clock::RunClock;
use crate::error::{Failure, InputError};
use crate::fleet::bystander::Bystander;
use crate::fleet::jobs::JobFactory;
use crate::metrics::{Event, LatencySummary};
use crate::provider::Server;
use crate::report::{self, RunFacts, RunResults, Summary};
use crate::scenario::Plan;
use crate::status::Status;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const PREFILL_BATCH: usize = 5_000;

/// The server a queue runs on, as the results record it.
#[derive(Debug, Clone, Default)]
pub struct ServerRecord {
    /// The provider that made it available (`memory` for the in-memory queue).
    pub provider: String,
    pub version: String,
    pub description: String,
    /// Where its data lives and how the run reached it.
    pub place: crate::provider::Place,
    /// The settings that shape results, as the server reports them.
    pub settings: BTreeMap<String, String>,
}

/// A queue installed and ready for load steps.
pub struct Session {
    /// The server, when the queue has one (the in-memory queue has none).
    server: Option<Arc<Server>>,
    backend: Arc<dyn Backend>,
    record: ServerRecord,
    clock: RunClock,
    started_at: String,
    key_prefix: String,
    /// The set-up's prefill, handed to the first step's recorder.
    prefilled: Option<Prefilled>,
    /// Jobs of the steps already run (proved), so later proofs know their rows.
    earlier: EarlierSteps,
    steps: usize,
    /// A step ended with jobs still queued: a later step would inherit them.
    backlog_left: bool,
    /// The bystander measured alone, before any load.
    bystander_quiet: Option<LatencySummary>,
    /// The queue table was empty at set-up and not analyzed: the first step analyzes it
    /// once its load has put rows in it.
    analyze_in_load: bool,
}

impl Session {
    /// Set-up on `server`: a namespace of its own with the design installed (a custom one
    /// checked before any load), the outbox's orders, the prefill, ANALYZE of a table with
    /// rows (of the empty table with `queue.stale_statistics`). On failure the
    /// namespace is dropped again (unless `keep`).
    pub async fn set_up(
        plan: &Plan,
        opts: &RunOptions,
        server: &Arc<Server>,
        shutdown: &CancellationToken,
    ) -> Result<Session, Failure> {
        check_server_faults(plan, server)?;
        let facts = server
            .endpoint()
            .describe()
            .await
            .context("reading server settings")?;
        let record = ServerRecord {
            provider: server.provider.as_str().into(),
            version: server.version.clone(),
            description: server.description.clone(),
            place: server.place.clone(),
            settings: facts.settings,
        };
        let installed = backend::install(
            &*server.endpoint(),
            "dbq_run",
            &plan.queue,
            plan.completion_audit,
        )
        .await
        .map_err(|e| match e {
            InstallError::Design(d) => {
                Failure::Input(InputError::new(&plan.source, "queue.dir", d.to_string()))
            }
            InstallError::Backend(e) => {
                Failure::Run(anyhow::Error::new(e).context("creating the queue"))
            }
        })?;
        let session = Session::new(Some(server.clone()), installed, record);
        session.prepare(plan, opts, shutdown).await
    }

    /// Set-up on a queue the caller made (the in-memory queue): the prefill and nothing else
    /// a server would need.
    pub async fn on_backend(
        plan: &Plan,
        opts: &RunOptions,
        backend: Arc<dyn Backend>,
        record: ServerRecord,
        shutdown: &CancellationToken,
    ) -> Result<Session, Failure> {
        Session::new(None, backend, record)
            .prepare(plan, opts, shutdown)
            .await
    }

    fn new(server: Option<Arc<Server>>, backend: Arc<dyn Backend>, record: ServerRecord) -> Self {
        Session {
            server,
            backend,
            record,
            clock: RunClock::start(),
            started_at: utc_now(),
            key_prefix: format!("r{:06x}", rand::random::<u32>() & 0xff_ffff),
            prefilled: None,
            earlier: EarlierSteps::default(),
            steps: 0,
            backlog_left: false,
            bystander_quiet: None,
            analyze_in_load: false,
        }
    }

    /// The outbox's orders, the prefill and ANALYZE; on failure the namespace is dropped.
    async fn prepare(
        mut self,
        plan: &Plan,
        opts: &RunOptions,
        shutdown: &CancellationToken,
    ) -> Result<Session, Failure> {
        let prepared = async {
            let mut admin = self
                .backend
                .connect("main")
                .await
                .context("connecting to the queue")?;
            let result = self.fill(&mut *admin, plan, &opts.status, shutdown).await;
            admin.close().await;
            result
        }
        .await;
        let prepared = match prepared {
            Ok(prefilled) => self
                .quiet_bystander(plan, opts, shutdown)
                .await
                .map(|()| prefilled),
            Err(e) => Err(e),
        };
        match prepared {
            Ok(prefilled) if !shutdown.is_cancelled() => {
                self.analyze_in_load = prefilled.count == 0
                    && !plan.queue.stale_statistics
                    && plan.database.engine.supports().planner_statistics;
                self.prefilled = Some(prefilled);
                Ok(self)
            }
            other => {
                self.abandon(opts.keep).await;
                Err(other.err().unwrap_or(Failure::Interrupted))
            }
        }
    }

    /// The bystander measured alone, with nothing else of the run under way, when the plan
    /// has one.
    async fn quiet_bystander(
        &mut self,
        plan: &Plan,
        opts: &RunOptions,
        shutdown: &CancellationToken,
    ) -> Result<(), Failure> {
        let Some(b) = plan.bystander.filter(|b| !b.quiet.is_zero()) else {
            return Ok(());
        };
        opts.status.line(&format!(
            "bystander: measuring {:.0} statements/s alone for {}",
            b.rate,
            humantime::format_duration(b.quiet)
        ));
        let bystander = Bystander {
            plan: b,
            seed: plan.seed ^ 0xb0,
        };
        self.bystander_quiet = bystander
            .quiet(self.backend.clone(), self.clock, b.quiet, shutdown)
            .await;
        Ok(())
    }

    async fn fill(
        &self,
        admin: &mut dyn Link,
        plan: &Plan,
        status: &Status,
        shutdown: &CancellationToken,
    ) -> Result<Prefilled, Failure> {
        if let Some(outbox) = plan.producers.outbox {
            admin
                .outbox()
                .context("the engine has no outbox (validation refuses it)")?
                .install_outbox(outbox.orders)
                .await
                .context("creating the outbox's orders")?;
        }
        if let Some(b) = plan.bystander {
            admin
                .bystander()
                .context("the engine has no bystander (validation refuses it)")?
                .install_bystander(b.rows)
                .await
                .context("creating the bystander's table")?;
        }
        if plan.queue.stale_statistics {
            status.line("analyzing the empty queue table (queue.stale_statistics)");
            admin
                .planner()
                .context("the engine has no planner (validation refuses it)")?
                .analyze()
                .await
                .context("ANALYZE of the empty queue table")?;
        }
        let prefilled =
            prefill(plan, admin, self.clock, &self.key_prefix, shutdown, status).await?;
        // Statistics only of a table with rows in it: a plan made on an empty table's
        // statistics (a sequential scan and a sort) is kept by every worker's prepared
        // statement until something invalidates it. A table left empty is analyzed by the
        // first step, once its load has put rows in it (`load::ANALYZE_AFTER`), and again
        // each time it doubles.
        if prefilled.count > 0
            && !plan.queue.stale_statistics
            && let Some(planner) = admin.planner()
        {
            planner
                .analyze()
                .await
                .context("ANALYZE of the queue table")?;
        }
        Ok(prefilled)
    }

    /// Drops the namespace of a set-up that failed (unless `keep`, or the server goes with
    /// it).
    async fn abandon(&self, keep: bool) {
        backend::release(&*self.backend);
        if !keep && !self.server_owned() {
            self.backend.drop_namespace().await.ok();
        }
    }

    fn server_owned(&self) -> bool {
        self.server.as_ref().is_some_and(|s| s.is_owned())
    }

    /// Whether the first step analyzes the queue table once its load has put rows in it (it
    /// was empty at set-up and `queue.stale_statistics` is off).
    pub fn analyzes_in_load(&self) -> bool {
        self.analyze_in_load
    }

    /// The installed queue.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The server's settings that shape results, as it reported them at set-up.
    pub fn server_settings(&self) -> &BTreeMap<String, String> {
        &self.record.settings
    }

    /// Whether a step left jobs queued (its drain timed out or was cut short): the next
    /// step's consumers would work on them, so its figures would not be its own.
    pub fn backlog_left(&self) -> bool {
        self.backlog_left
    }

    /// What a step's load needs of the session; its results go to `out_dir`.
    fn target(&self, out_dir: PathBuf) -> LoadTarget {
        LoadTarget {
            backend: self.backend.clone(),
            server: self.server.clone(),
            clock: self.clock,
            step: self.steps,
            // Unique keys of this step's jobs start with this.
            key_prefix: match self.steps {
                0 => self.key_prefix.clone(),
                n => format!("{}s{n}", self.key_prefix),
            },
            analyze: self.steps == 0 && self.analyze_in_load,
            out_dir,
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
        let claim_plan_start = self.explain_claim().await?;
        let prefilled = self.prefilled.take().unwrap_or_default();
        let started_at = match self.steps {
            0 => self.started_at.clone(),
            _ => utc_now(),
        };
        let out_dir = opts
            .out_dir
            .clone()
            .unwrap_or_else(|| default_out_dir(&plan.name));
        let target = self.target(out_dir.clone());
        let load = Load::start(target, plan, opts, prefilled.events, shutdown).await;
        let ended = load.finish(plan, shutdown).await?;
        self.steps += 1;
        let drained = !ended.stopped_early && !ended.drain_timed_out;
        self.backlog_left |= !drained;
        // A new connection: the load's faults may have broken older ones.
        let claim_plan_end = self.explain_claim().await?;
        let design = self.backend.design();
        let facts = RunFacts {
            provider: self.record.provider.clone(),
            server_version: self.record.version.clone(),
            server_description: self.record.description.clone(),
            server_place: self.record.place.clone(),
            schema: self.backend.namespace().to_string(),
            started_at,
            ended_at: utc_now(),
            interrupted: shutdown.is_cancelled(),
            drain_s: ended.drain_s,
            drain_timed_out: ended.drain_timed_out,
            prefilled: prefilled.count,
            design: design.clone(),
            claim_plan_start,
            claim_plan_end,
            server_settings: self.record.settings.clone(),
            aborted_by_threshold: ended.aborted_by_threshold.clone(),
            bystander_quiet: self.bystander_quiet,
            group_forming: ended.group_forming.clone(),
        };
        self.conclude(plan, opts, ended, facts, out_dir).await
    }

    /// The claim's plan, on a connection of its own; where the engine has no planner, the
    /// claim in the design's own words.
    /// Cleans the queue table up now where the engine does that on demand (VACUUM), so the
    /// next step does not start from the dead rows an overloaded one left behind.
    pub async fn clean_up(&self) -> Result<(), Failure> {
        let mut admin = self
            .backend
            .connect("main")
            .await
            .context("connecting to the queue")?;
        let cleaned = match admin.vacuum() {
            Some(vacuum) => vacuum
                .clean_up()
                .await
                .context("cleaning the queue table up"),
            None => Ok(()),
        };
        admin.close().await;
        Ok(cleaned?)
    }

    async fn explain_claim(&self) -> Result<Vec<String>, Failure> {
        let mut admin = self
            .backend
            .connect("main")
            .await
            .context("connecting to the queue")?;
        let plan = match admin.planner() {
            Some(planner) => planner
                .explain_claim()
                .await
                .context("EXPLAIN of the claim"),
            None => Ok(vec![self.backend.design().claim_sql.clone()]),
        };
        admin.close().await;
        Ok(plan?)
    }

    /// The step's proof against the table, its summary and thresholds, its results on disk.
    async fn conclude(
        &mut self,
        plan: &Plan,
        opts: &RunOptions,
        ended: Ended,
        facts: RunFacts,
        out_dir: PathBuf,
    ) -> Result<RunOutcome, Failure> {
        let Ended {
            measurements,
            drain_timed_out,
            stopped_early,
            ..
        } = ended;
        let mut ledger = measurements.ledger.clone();
        let proof_options = super::proof_options(plan, !stopped_early && !drain_timed_out);
        let mut admin = self
            .backend
            .connect("main")
            .await
            .context("connecting to the queue")?;
        let proof = accounting::prove(&mut *admin, &mut ledger, proof_options, &self.earlier).await;
        admin.close().await;
        let proof = proof?;
        self.earlier.extend(&ledger);
        let mut summary =
            Summary::build(&super::setup_of(plan), &measurements, &ledger, proof, facts);
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
        report::write_all(&out_dir, &results)?;
        // The proof is in summary.json now: the journal kept it only in case the run died.
        let _ = std::fs::remove_file(out_dir.join(crate::metrics::journal::FILE));
        Ok(RunOutcome {
            results,
            out_dir,
            ledger,
            kept_queue: None,
            kept_server: None,
        })
    }

    /// Tear-down: drops the namespace, unless `keep` (then the queue is returned). A server
    /// the run owns takes its namespaces with it when it is torn down, so theirs are left to
    /// it.
    pub async fn tear_down(self, keep: bool, status: &Status) -> Option<Arc<dyn Backend>> {
        backend::release(&*self.backend);
        if keep {
            return Some(self.backend);
        }
        if !self.server_owned()
            && let Err(e) = self.backend.drop_namespace().await
        {
            status.warn(&format!("dropping {}: {e}", self.backend.namespace()));
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
    conn: &mut dyn Link,
    clock: RunClock,
    key_prefix: &str,
    shutdown: &CancellationToken,
    status: &Status,
) -> Result<Prefilled> {
    let total = plan.producers.prefill as usize;
    if total > 0 {
        status.line(&format!("prefilling {total} jobs…"));
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
        let ids = conn
            .enqueue_batch(&jobs)
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
