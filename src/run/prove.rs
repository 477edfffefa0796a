//! `prove DIR`: the accounting proof of a run whose harness died. Its journal
//! ([`crate::metrics::journal`]) is replayed into a ledger, read as the run would have read
//! it, and proved against the queue it names (still on its server, since no tear-down ran):
//! every job the harness saw committed is done, dead-lettered, still queued, or named lost.

use crate::accounting::{self, AccountingProof, EarlierSteps};
use crate::backend::{self, Attachment};
use crate::clock::RunClock;
use crate::error::{Failure, InputError};
use crate::metrics::journal::{self, Journal};
use crate::metrics::{LiveStats, Recorder};
use crate::scenario::{EnvDefaults, Overrides, load_plan};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The proof of a journal, as plain data (`proof.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JournalProof {
    /// Events the journal held, and whether its last line was cut short by the death.
    pub events: usize,
    pub torn: bool,
    /// The run clock's last event in the journal, in seconds from the load's start: what the
    /// harness had seen when it died.
    pub last_event_s: f64,
    /// The queue proved against: engine, server (password masked) and namespace.
    pub engine: String,
    pub server: String,
    pub namespace: String,
    pub proof: AccountingProof,
    /// The queue was dropped once proved (`--drop`).
    pub dropped: bool,
    /// What the run had started (a server, worker processes), as its journal says: a
    /// harness that died left them running.
    pub started: Vec<String>,
    /// Rows in the queue the journal never saw committed, as the proof counts them: the
    /// producers' last inserts before the death most likely (the journal is written every
    /// few milliseconds), or another client's.
    pub untracked: u64,
}

/// The file `prove` writes beside the journal.
pub const PROOF_FILE: &str = "proof.json";

/// Replays `dir`'s journal and proves it against its queue: on `url` when given, else on the
/// server the journal names (when its URL carries no password that saved files mask). With
/// `drop_queue`, the queue (the run's namespace) is dropped once proved.
pub async fn prove_journal(
    dir: &Path,
    url: Option<&str>,
    drop_queue: bool,
) -> Result<JournalProof, Failure> {
    let replay = read_journal(dir)?;
    let h = &replay.header;
    let at = Attachment {
        engine: h.engine.clone(),
        url: server_url(dir, h, url)?,
        namespace: h.namespace.clone(),
    };
    let plan = load_plan(
        &dir.join(crate::report::RESOLVED_SCENARIO),
        &Overrides::default(),
        &EnvDefaults::default(),
    )?;
    let backend = backend::attach(&at, &plan.queue).context("reaching the run's queue")?;
    let last_us = replay
        .events
        .iter()
        .filter_map(event_time)
        .max()
        .unwrap_or(0);
    let events = replay.events.len();
    let recorder = Recorder::new(
        h.windows.clone(),
        h.load_start_us,
        plan.producers.late_after,
        Arc::new(LiveStats::new()),
    );
    // Read as the run read them: through the recorder, the sender gone once all are sent.
    let (events_in, events_out) = tokio::sync::mpsc::unbounded_channel();
    replay
        .events
        .into_iter()
        .for_each(|e| drop(events_in.send(e)));
    drop(events_in);
    let (_, no_snapshots) = tokio::sync::mpsc::unbounded_channel();
    let (clock, wall) = (RunClock::start(), std::time::SystemTime::now());
    let replayed = recorder.run(events_out, no_snapshots, clock, wall, Journal::off());
    let mut ledger = replayed.await.ledger;
    ledger.harness_died();
    let mut conn = backend
        .connect("prove")
        .await
        .context("connecting to the queue")?;
    let options = super::proof_options(&plan, false);
    let proof = accounting::prove(&mut *conn, &mut ledger, options, &EarlierSteps::default()).await;
    conn.close().await;
    let proof = proof?;
    if drop_queue {
        backend
            .drop_namespace()
            .await
            .context("dropping the run's queue")?;
    }
    Ok(JournalProof {
        events,
        torn: replay.torn,
        last_event_s: last_us.saturating_sub(h.load_start_us) as f64 / 1e6,
        engine: h.engine.clone(),
        server: crate::redact::redact_url(&at.url),
        namespace: h.namespace.clone(),
        untracked: proof.untracked_count,
        proof,
        dropped: drop_queue,
        started: h.started.clone(),
    })
}

fn bad_input(dir: &Path, key: &str, reason: String) -> Failure {
    InputError::new(dir.display().to_string(), key, reason).into()
}

/// The journal of `dir`, or why there is none.
fn read_journal(dir: &Path) -> Result<journal::Replay, Failure> {
    if !dir.join(journal::FILE).exists() {
        let why = match dir.join("summary.json").exists() {
            true => {
                "the run ended and wrote its proof into summary.json (a journal is kept only while a run is under way)"
            }
            false => "not a results directory of a run that started its load",
        };
        return Err(bad_input(dir, journal::FILE, why.into()));
    }
    journal::read(dir).map_err(|e| bad_input(dir, journal::FILE, e))
}

/// The server to prove on: `url` when given, else the journal's when it is whole.
fn server_url(dir: &Path, h: &journal::Header, url: Option<&str>) -> Result<String, Failure> {
    match url {
        Some(u) => Ok(u.to_string()),
        None if !h.url.contains("***") => Ok(h.url.clone()),
        None => Err(bad_input(
            dir,
            "--database-url",
            format!(
                "the run's server is {} (its password is not saved): give its URL with --database-url",
                h.url
            ),
        )),
    }
}

/// When an event happened on the run clock, where it says.
fn event_time(e: &crate::metrics::Event) -> Option<u64> {
    use crate::metrics::Event as E;
    match e {
        E::Enqueued { committed_us, .. }
        | E::Prefilled { committed_us, .. }
        | E::Completed { committed_us, .. }
        | E::Failed { committed_us, .. } => Some(*committed_us),
        E::Claimed { claimed_us, .. } => Some(*claimed_us),
        E::Stale { at_us, .. }
        | E::WorkerError { at_us, .. }
        | E::WorkerCrashed { at_us, .. }
        | E::Reaped { at_us, .. }
        | E::Fatal { at_us, .. } => Some(*at_us),
        _ => None,
    }
}
