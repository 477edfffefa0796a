//! PostgreSQL's facts: what it runs, its figures' words, its URL check and image. The registry
//! (`backend::registry`) reads them; validation refuses what they do not list.

use crate::backend::engine::{
    ALL_FAULTS, EngineFacts, Install, ReadsFrom, Supports, TestServer, Words,
};
use std::str::FromStr;

pub const FACTS: EngineFacts = EngineFacts {
    name: "postgres",
    label: "PostgreSQL",
    schemes: &["postgres", "postgresql"],
    parse_url: |u| {
        sqlx::postgres::PgConnectOptions::from_str(u)
            .map(drop)
            .map_err(|e| e.to_string())
    },
    install: Some(Install {
        image: "postgres:17",
        variable: "DBQ_POSTGRES_IMAGE",
        build_script: "docker/build-postgres-image.sh",
        local_install: "apt-get install postgresql",
        built_tag: "dbq-bench-postgres:15",
        test_server: TestServer {
            variable: "DBQ_TEST_DATABASE_URL",
            settings: &[("fsync", "off"), ("max_connections", "300")],
            url: |port, _| format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        },
    }),
    supports: Supports {
        variants: &[
            "seed",
            "batch",
            "notify",
            "delete",
            "archive",
            "plain_index",
            "advisory_lock",
            "visibility_timeout",
            "rotation",
            "custom",
        ],
        faults: ALL_FAULTS,
        table_options: true,
        outbox: true,
        url_session_settings: true,
        calibrate: true,
        ..crate::backend::sql::SUPPORTS
    },
    words: Words {
        dead_tuples: "dead tuples",
        wal: "WAL",
        cleanup: "autovacuums",
        manual_cleanup: Some("VACUUM(s) of the queue table"),
        size: "table and index",
        size_per_job: true,
        while_held: "during (VACUUM while held)",
        once_released: "after (VACUUM once released)",
        server_figures: "The design's other tables that keep jobs (job_queue_archive for archive, job_dead_letter for rotation): their rows (the statistics collector's estimate) and size with indexes.",
    },
    foreign_setting: |name| {
        name.starts_with("innodb_").then_some(
            "a MariaDB (InnoDB) setting; on PostgreSQL vacuum's levers are autovacuum_naptime, \
             autovacuum_vacuum_scale_factor and autovacuum_vacuum_cost_limit",
        )
    },
    reads: ReadsFrom::Counters("pg_stat_user_tables, the sampler's own reads taken out"),
    client_may_crash: false,
    counts_deliveries: |_| Ok(()),
};
