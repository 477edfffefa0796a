//! graphile_worker (Rust) as one of dbq-bench's consumers: the glue around its task handler.
//!
//! Started by dbq-bench in the design's directory with the run's server and schema in libpq's
//! variables (PGHOST, …, PGOPTIONS=-c search_path=<run schema>) and its settings in
//! DBQ_BENCH_*. graphile_worker fetches, runs, retries and finishes the jobs; the task only
//! asks the harness what to do, over the handler protocol (docs/libraries.md), as the Python
//! examples' glue does.
//!
//! `--print-schema` prints graphile_worker's schema as its migrator installs it (its install
//! step and every migration's statements, the schema's name taken out): schema.sql carries
//! it verbatim, and a test compares the two.

mod harness;

use graphile_worker::{IntoTaskHandlerResult, TaskHandler, WorkerContext, WorkerOptions};
use harness::Harness;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

/// The task dbq-bench's enqueue.sql adds (`add_job('dbq_bench_job', …)`): its payload is the
/// harness's JSON object.
#[derive(Deserialize, Serialize)]
#[serde(transparent)]
struct DbqBenchJob {
    payload: serde_json::Value,
}

static HARNESS: OnceLock<Harness> = OnceLock::new();

impl TaskHandler for DbqBenchJob {
    const IDENTIFIER: &'static str = "dbq_bench_job";

    async fn run(self, ctx: WorkerContext) -> impl IntoTaskHandlerResult {
        let job = ctx.job();
        // graphile_worker counts an attempt when it takes the job: this is run `attempts`.
        let attempt = *job.attempts() as u32;
        let retrying = job.attempts() < job.max_attempts();
        let harness = HARNESS.get().expect("connected before the worker ran");
        harness
            .handle(*job.id(), self.payload, attempt, retrying)
            .await
    }
}

/// A DBQ_BENCH_* setting the harness passed, noted for the hello.
fn setting(said: &mut BTreeMap<String, serde_json::Value>, name: &str) -> Option<f64> {
    let key = format!("DBQ_BENCH_{name}");
    let value = std::env::var(&key).ok()?;
    said.insert(key, value.clone().into());
    value.parse().ok()
}

/// The run's schema, from libpq's PGOPTIONS (`-c search_path=…`).
fn run_schema() -> Result<String, String> {
    let options = std::env::var("PGOPTIONS").unwrap_or_default();
    let words: Vec<&str> = options.split_whitespace().collect();
    words
        .windows(2)
        .find_map(|w| {
            (w[0] == "-c")
                .then(|| w[1].strip_prefix("search_path="))
                .flatten()
        })
        .map(str::to_string)
        .ok_or_else(|| format!("PGOPTIONS ({options:?}) names no search_path"))
}

fn print_schema() {
    println!(
        "create table if not exists migrations (\n    id int primary key,\n    ts timestamptz default now() not null,\n    breaking boolean not null default false\n);\n"
    );
    for m in graphile_worker_migrations::sql::GRAPHILE_WORKER_MIGRATIONS {
        println!("-- {}", m.name());
        for stmt in m.stmts {
            let stmt = stmt.trim().replace(":GRAPHILE_WORKER_SCHEMA.", "");
            let end = if stmt.ends_with(';') { "" } else { ";" };
            println!("{stmt}{end}\n");
        }
        println!(
            "insert into migrations (id, breaking) values ({}, {});\n",
            m.migration_number(),
            m.is_breaking()
        );
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--print-schema") {
        print_schema();
        return Ok(());
    }
    let mut said = BTreeMap::new();
    let concurrency = setting(&mut said, "CONCURRENCY").unwrap_or(1.0) as usize;
    let poll = setting(&mut said, "POLL_INTERVAL_S").unwrap_or(1.0);
    let stale = setting(&mut said, "STALE_AFTER_S");
    let schema = run_schema()?;
    said.insert("concurrency".into(), concurrency.into());
    said.insert("recovery".into(), stale.is_some().into());
    let harness = Harness::connect("graphile_worker 0.14.1 (Rust)", said).await?;
    let _ = HARNESS.set(harness);

    let connect = sqlx::postgres::PgConnectOptions::new().options([("search_path", &schema)]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(concurrency as u32 + 4)
        .connect_with(connect)
        .await?;
    let mut options = WorkerOptions::default()
        .pg_pool(pool)
        .schema(schema.as_str())
        .concurrency(concurrency)
        .poll_interval(Duration::from_secs_f64(poll))
        .define_job::<DbqBenchJob>();
    if let Some(stale) = stale {
        // graphile_worker's dead-worker recovery: a worker whose heartbeat is older than
        // reaper.stale_after is swept, and its jobs become available again at once.
        let stale = Duration::from_secs_f64(stale);
        options = options
            .heartbeat_interval(stale / 3)
            .sweep_interval(Duration::from_secs(1))
            .sweep_threshold(stale)
            .recovery_delay(Duration::ZERO);
    }
    // SIGTERM (the harness ending the run) drains as graphile_worker's own runner does.
    options.init().await?.run().await?;
    Ok(())
}
