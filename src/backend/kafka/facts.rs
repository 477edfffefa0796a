//! Kafka's facts: what it runs, its figures' words, its URL check and image. The registry
//! (`backend::registry`) reads them; validation refuses what they do not list. The servers
//! the harness starts itself are Tansu, a Kafka-API broker built from crates.io (Debian has
//! no Kafka package and no image registry may be reachable): every figure measured on one
//! is labelled with Tansu's name and version, never as Kafka.

use super::url::bootstrap_servers;
use crate::backend::engine::{
    EngineFacts, Install, ReadsFrom, Supports, TestServer, Words, is_vacuum_setting,
};

pub const FACTS: EngineFacts = EngineFacts {
    name: "kafka",
    label: "Kafka API",
    schemes: &["kafka"],
    parse_url: |u| bootstrap_servers(u).map(drop),
    install: Some(Install {
        image: "dbq-bench-kafka:tansu-0.6.0",
        variable: "DBQ_KAFKA_IMAGE",
        build_script: "docker/build-kafka-image.sh",
        local_install: "scripts/install-tansu (cargo install tansu --version 0.6.0 --features dynostore)",
        built_tag: "dbq-bench-kafka:tansu-0.6.0",
        test_server: TestServer {
            variable: "DBQ_TEST_KAFKA_URL",
            settings: &[],
            url: |port, _| {
                format!("kafka://127.0.0.1:{port}?batch.num.messages=1&fetch.wait.max.ms=10")
            },
        },
    }),
    supports: Supports {
        variants: &["seed", "batch"],
        faults: &["crash_workers", "kill_workers", "freeze_workers", "pause_workers"],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        claim_in_transaction: true,
        claim_committed: false,
        own_keys: &["queue.partitions"],
        completion_audit: false,
        bystander: false,
        at_least_once_completions: true,
        group: true,
        provenance: true,
        planner_statistics: false,
    },
    words: Words {
        dead_tuples: "dead tuples (none: a topic is an append-only log)",
        wal: "log",
        cleanup: "autovacuums (none: records stay until retention removes them)",
        manual_cleanup: None,
        size: "log",
        size_per_job: true,
        while_held: "during",
        once_released: "after",
        server_figures: "From the topics' watermarks and the consumer group's committed offsets: records is what the jobs' topic holds, lag what the group has not committed (waiting or in flight), retries and dead_letters what the retry and dead-letter topics hold; stalled_partitions how many partitions had waiting records that no member committed past for 3 s or more (the group not reading them), stalled_for_ms the longest such wait.",
    },
    foreign_setting: |name| {
        (is_vacuum_setting(name) || name.starts_with("innodb_")).then_some(
            "a database's cleanup setting; Kafka has no vacuum or purge (records stay until \
             retention removes them)",
        )
    },
    reads: ReadsFrom::Nothing,
    client_may_crash: true,
    counts_deliveries: |_| Err(super::NO_DELIVERY_COUNT.into()),
};
