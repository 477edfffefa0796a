//! Redis's facts: what it runs, its figures' words, its URL check and image. The registry
//! (`backend::registry`) reads them; validation refuses what they do not list.

use crate::backend::engine::{
    EngineFacts, Install, ReadsFrom, Supports, TestServer, Words, is_vacuum_setting,
};

pub const FACTS: EngineFacts = EngineFacts {
    name: "redis",
    label: "Redis",
    schemes: &["redis"],
    parse_url: |u| redis::Client::open(u).map(drop).map_err(|e| e.to_string()),
    install: Some(Install {
        image: "redis:7.0",
        variable: "DBQ_REDIS_IMAGE",
        build_script: "docker/build-redis-image.sh",
        local_install: "apt-get install redis-server",
        built_tag: "dbq-bench-redis:7.0",
        test_server: TestServer {
            variable: "DBQ_TEST_REDIS_URL",
            settings: &[("appendfsync", "everysec")],
            url: |port, _| format!("redis://127.0.0.1:{port}/0"),
        },
    }),
    supports: Supports {
        variants: &["seed", "batch"],
        faults: &[
            "crash_workers",
            "kill_workers",
            "pause_workers",
            "freeze_workers",
            "kill_backends",
            "restart_server",
        ],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: false,
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
        dead_tuples: "dead tuples (none: a stream has no MVCC)",
        wal: "append-only file",
        cleanup: "autovacuums (none: acknowledged entries are deleted)",
        manual_cleanup: None,
        size: "server memory",
        size_per_job: false,
        while_held: "during",
        once_released: "after",
        server_figures: "From the stream (XLEN, XPENDING), the delayed set and the dead-letter stream, and from INFO (used_memory, aof_current_size, total_commands_processed).",
    },
    foreign_setting: |name| {
        (is_vacuum_setting(name) || name.starts_with("innodb_")).then_some(
            "a database's cleanup setting; Redis has no vacuum or purge (acknowledged entries \
             are deleted): its durability levers are appendonly, appendfsync and save",
        )
    },
    reads: ReadsFrom::Nothing,
    client_may_crash: false,
    counts_deliveries: |_| Ok(()),
};
