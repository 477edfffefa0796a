//! What a backend says about its queue: a sample of statistics (for the sampler), the claim's
//! measured cost (at phase boundaries), and the table's size and garbage (around faults).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Tuple counts and sizes of the queue table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub table_bytes: i64,
    pub total_bytes: i64,
}

/// One sample of database statistics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbSample {
    /// Jobs waiting: every sample counts them (from the pending index, so the cost follows
    /// the backlog, not the table).
    pub pending: i64,
    /// The other statuses need a scan of the whole table, so only full samples (the first,
    /// and one at each phase boundary) count them.
    #[serde(default)]
    pub processing: Option<i64>,
    #[serde(default)]
    pub done: Option<i64>,
    #[serde(default)]
    pub dead_letter: Option<i64>,
    /// How long the sample took, ms.
    #[serde(default)]
    pub sample_ms: f64,
    /// What the queue's storage holds: the table's live rows (PostgreSQL's count,
    /// InnoDB's estimate), a topic's records, a queue's messages, a stream's entries.
    #[serde(alias = "live_tuples")]
    pub held: i64,
    /// Old row versions kept for MVCC and their cleanup, on an engine that keeps them (the
    /// SQL engines, in their own words: PostgreSQL's dead tuples and vacuums, InnoDB's undo
    /// history); absent on a broker.
    #[serde(flatten, default)]
    pub versions: Option<RowVersions>,
    pub table_bytes: i64,
    /// Table, indexes and TOAST.
    pub total_bytes: i64,
    pub index_bytes: BTreeMap<String, i64>,
    pub xact_commit: i64,
    pub xact_rollback: i64,
    pub deadlocks: i64,
    /// WAL position in bytes (differences between samples are WAL written).
    pub wal_bytes: i64,
    /// How long the oldest open transaction in the database has been running.
    pub oldest_xact_s: f64,
    /// Fraction of the LISTEN/NOTIFY queue in use, on an engine that has one (PostgreSQL).
    #[serde(default)]
    pub notify_queue_usage: Option<f64>,
    /// Checkpoints the server has made so far (timed and requested), where it counts them.
    #[serde(default)]
    pub checkpoints: i64,
    /// The run's non-idle sessions by wait event (`type:event`, or CPU).
    pub wait_events: BTreeMap<String, i64>,
    /// A broker's own figures, in its own words (`unacked`, `node_memory_bytes`); a name
    /// ending in `_total` is a counter, the others are levels. Empty for the databases,
    /// whose figures fill the fields above.
    #[serde(default)]
    pub server: BTreeMap<String, i64>,
    /// How the queue table was read, as the server counts it (cumulative): what every
    /// session's statements did, the workers' prepared ones included. Where the engine
    /// counts reads per table (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<TableReads>,
    /// What this sample's own statements read of the queue table (the server adds them to
    /// `reads` once they are reported, in this sample or a later one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_reads: Option<TableReads>,
    /// What the session's earlier statements had read of the queue table and not yet
    /// reported when this sample read `reads`: the part of the earlier own reads that
    /// `reads` does not hold yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_unreported: Option<TableReads>,
}

/// Old row versions an MVCC engine keeps, and their cleanup (counters are cumulative).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowVersions {
    /// Dead row versions not yet cleaned up (PostgreSQL's dead tuples), or the undo not yet
    /// purged (InnoDB's history list length).
    #[serde(rename = "dead_tuples")]
    pub dead: i64,
    /// Manual cleanups of the queue table (VACUUM), where the engine runs them.
    pub vacuums: i64,
    /// The server's own cleanups of it (autovacuum).
    pub autovacuums: i64,
    pub analyzes: i64,
    pub autoanalyzes: i64,
    /// Age in transactions of the oldest snapshot held in the database (PostgreSQL's xmin
    /// horizon), where the engine tells it.
    #[serde(rename = "xmin_age_xids", default)]
    pub horizon_age_xids: Option<i64>,
}

/// Reads of the queue table (summed over its partitions): sequential scans and the rows they
/// returned, index scans and the rows they fetched from the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableReads {
    pub seq_scans: i64,
    pub seq_rows: i64,
    pub index_scans: i64,
    pub index_rows: i64,
}

impl TableReads {
    /// `self` less `other`, figure by figure.
    pub fn minus(self, other: TableReads) -> TableReads {
        TableReads {
            seq_scans: self.seq_scans - other.seq_scans,
            seq_rows: self.seq_rows - other.seq_rows,
            index_scans: self.index_scans - other.index_scans,
            index_rows: self.index_rows - other.index_rows,
        }
    }

    /// `self` and `other` added, figure by figure.
    pub fn plus(self, other: TableReads) -> TableReads {
        TableReads {
            seq_scans: self.seq_scans + other.seq_scans,
            seq_rows: self.seq_rows + other.seq_rows,
            index_scans: self.index_scans + other.index_scans,
            index_rows: self.index_rows + other.index_rows,
        }
    }
}

/// The claim statement executed once under `EXPLAIN (ANALYZE, BUFFERS)` and rolled back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaimProbe {
    /// Shared buffers the claim touched (hit in cache + read).
    pub buffers_hit: i64,
    pub buffers_read: i64,
    pub execution_ms: f64,
    /// Rows the claim returned (0 when no job was ready).
    pub rows: i64,
    /// The plan's nodes, outermost first (e.g. "Index Scan using idx_job_queue_pending").
    pub plan: Vec<String>,
}

/// A workers' group as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupView {
    /// The coordinator's word for the group's state (Kafka's `Stable`, `PreparingRebalance`…).
    pub state: String,
    /// No member is joining or leaving: every member has its part and keeps it.
    pub settled: bool,
    pub members: usize,
}

impl GroupView {
    /// The group has settled with exactly `expected` members.
    pub fn formed(&self, expected: usize) -> bool {
        self.settled && self.members == expected
    }
}
