//! MariaDB's facts: what it runs, its figures' words, its URL check and image. The registry
//! (`backend::registry`) reads them; validation refuses what they do not list.

use crate::backend::engine::{
    EngineFacts, Install, ReadsFrom, Supports, TestServer, Words, is_vacuum_setting,
};
use crate::backend::sql::driver::SqlServers;

pub const FACTS: EngineFacts = EngineFacts {
    name: "mariadb",
    label: "MariaDB",
    schemes: &["mariadb", "mysql"],
    parse_url: |u| super::Maria::parse(u).map(drop).map_err(|e| e.to_string()),
    install: Some(Install {
        image: "mariadb:10.11",
        variable: "DBQ_MARIADB_IMAGE",
        build_script: "docker/build-mariadb-image.sh",
        local_install: "apt-get install mariadb-server",
        built_tag: "dbq-bench-mariadb:10.11",
        test_server: TestServer {
            variable: "DBQ_TEST_MARIADB_URL",
            settings: &[
                ("innodb-flush-log-at-trx-commit", "2"),
                ("max-connections", "300"),
            ],
            url: |port, _| format!("mysql://root@127.0.0.1:{port}"),
        },
    }),
    supports: Supports {
        variants: &[
            "seed",
            "batch",
            "delete",
            "archive",
            "visibility_timeout",
            "custom",
        ],
        faults: &[
            "crash_workers",
            "kill_workers",
            "pause_workers",
            "kill_backends",
            "restart_server",
            "idle_in_transaction",
            "analyze",
        ],
        table_options: false,
        outbox: false,
        url_session_settings: false,
        calibrate: false,
        ..crate::backend::sql::SUPPORTS
    },
    words: Words {
        dead_tuples: "undo history (InnoDB history list length)",
        wal: "redo log",
        cleanup: "autovacuums (none: InnoDB purges)",
        manual_cleanup: None,
        size: "table and index",
        size_per_job: true,
        while_held: "during (purge blocked while held)",
        once_released: "after (purge once released)",
        server_figures: "",
    },
    foreign_setting: |name| {
        is_vacuum_setting(name).then_some(
            "a PostgreSQL vacuum setting; MariaDB has no vacuum (InnoDB purges old row versions \
             in the background): its levers are innodb_purge_threads, innodb_max_purge_lag and \
             innodb_purge_batch_size",
        )
    },
    reads: ReadsFrom::ClaimProbes(
        "the claim probes: MariaDB plans a prepared statement again at every execution, so a \
         probe's plan is the workers' plan at that moment",
    ),
    client_may_crash: false,
    counts_deliveries: |_| Ok(()),
};
