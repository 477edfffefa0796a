//! The transactional outbox's half of the proof: no job of a rolled-back business
//! transaction exists, and every paid order has exactly one job. Read through the engine's
//! outbox statements; only the numbers and the first problems are kept.

use super::LIST_LIMIT;
use crate::backend::Link;
use crate::metrics::{JobId, Ledger};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The transactional outbox's promises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxProof {
    pub ok: bool,
    pub paid_orders: i64,
    pub rolled_back: u64,
    /// Jobs of rolled-back transactions found in the table (must be none).
    pub rolled_back_jobs_found: Vec<JobId>,
    /// Orders that are paid without exactly one job, or not paid with a job: (order, status, jobs).
    pub bad_orders: Vec<(i64, String, i64)>,
}

pub(super) async fn outbox_proof(conn: &mut dyn Link, ledger: &Ledger) -> Result<OutboxProof> {
    let outbox = conn
        .outbox()
        .context("outbox: the engine has no outbox (validation refuses it)")?;
    let paid_orders = outbox
        .paid_orders()
        .await
        .context("outbox: counting paid orders")?;
    let bad_orders = outbox
        .outbox_problems()
        .await
        .context("outbox: checking orders against jobs")?;
    let found = conn
        .jobs_by_key(&ledger.rolled_back_keys)
        .await
        .context("outbox: looking for rolled-back jobs")?;
    Ok(OutboxProof {
        ok: found.is_empty() && bad_orders.is_empty(),
        paid_orders,
        rolled_back: ledger.rolled_back_keys.len() as u64,
        rolled_back_jobs_found: found.iter().map(|(id, _)| *id).take(LIST_LIMIT).collect(),
        bad_orders: bad_orders.into_iter().take(LIST_LIMIT).collect(),
    })
}
