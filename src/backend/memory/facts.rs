//! The in-memory queue's facts: the seed's life of a job in this process's memory, no server.
//! A run reaches it by URL (`memory://`), which measures the harness with nothing in its way.

use crate::backend::engine::{EngineFacts, ReadsFrom, Supports, Words};

pub const FACTS: EngineFacts = EngineFacts {
    name: "memory",
    label: "the in-memory queue",
    schemes: &["memory"],
    parse_url: |_| Ok(()),
    install: None,
    supports: Supports {
        variants: &["seed", "batch"],
        faults: &["crash_workers", "pause_workers"],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: true,
        claim_committed: true,
        own_keys: &[],
        completion_audit: true,
        bystander: true,
        at_least_once_completions: false,
        group: false,
        provenance: false,
        planner_statistics: false,
    },
    words: Words {
        dead_tuples: "dead tuples (none: rows are replaced in memory)",
        wal: "log (none)",
        cleanup: "autovacuums (none)",
        manual_cleanup: None,
        size: "memory",
        size_per_job: true,
        while_held: "during",
        once_released: "after",
        server_figures: "",
    },
    foreign_setting: |_| Some("the in-memory queue has no server, so no server settings"),
    reads: ReadsFrom::Nothing,
    client_may_crash: false,
    counts_deliveries: |_| Ok(()),
};
