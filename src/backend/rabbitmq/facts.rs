//! RabbitMQ's facts: what it runs, its figures' words, its URL check and image. The registry
//! (`backend::registry`) reads them; validation refuses what they do not list.

use super::admin::management_port;
use crate::backend::engine::{
    EngineFacts, Install, ReadsFrom, Supports, TestServer, Words, is_vacuum_setting,
};
use std::str::FromStr;

pub const FACTS: EngineFacts = EngineFacts {
    name: "rabbitmq",
    label: "RabbitMQ",
    schemes: &["amqp"],
    parse_url: |u| {
        lapin::uri::AMQPUri::from_str(u).map_err(|e| e.to_string())?;
        management_port(u).map(drop)
    },
    install: Some(Install {
        image: "rabbitmq:3.10",
        variable: "DBQ_RABBITMQ_IMAGE",
        build_script: "docker/build-rabbitmq-image.sh",
        local_install: "apt-get install rabbitmq-server",
        built_tag: "dbq-bench-rabbitmq:3.10",
        test_server: TestServer {
            variable: "DBQ_TEST_RABBITMQ_URL",
            settings: &[],
            url: |port, admin| {
                format!("amqp://guest:guest@127.0.0.1:{port}/%2f?management_port={admin}")
            },
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
        claim_in_transaction: true,
        claim_committed: false,
        own_keys: &["queue.rabbitmq_queue"],
        completion_audit: false,
        bystander: false,
        at_least_once_completions: false,
        group: false,
        provenance: false,
        planner_statistics: false,
    },
    words: Words {
        dead_tuples: "dead tuples (none: a queue has no MVCC)",
        wal: "message store",
        cleanup: "autovacuums (none: acknowledged messages are gone)",
        manual_cleanup: None,
        size: "server memory",
        size_per_job: false,
        while_held: "during",
        once_released: "after",
        server_figures: "From the broker's management API (which takes them in once a second on the brokers the harness starts, every 5 s by default): ready and unacked are the jobs' queue's messages, dead_letters its dead letters' queue's, persistent_bytes the jobs' messages written to disk, the memory the queue's and the node's, and the rates what the jobs' queue took in (published, retries included), handed out (delivered, redelivered) and had acknowledged.",
    },
    foreign_setting: |name| {
        (is_vacuum_setting(name) || name.starts_with("innodb_")).then_some(
            "a database's cleanup setting; RabbitMQ has no vacuum or purge (acknowledged \
             messages are gone): its settings are rabbitmq.conf keys",
        )
    },
    reads: ReadsFrom::Nothing,
    client_may_crash: false,
    counts_deliveries: |q| super::Settings::of(q).rabbitmq_queue.counts_deliveries(),
};
