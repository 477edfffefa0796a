//! The harness's own ceiling: producers (closed loop) → an in-memory queue → consumers →
//! recorder → ledger → proof, with no server in the way (`dbq_bench::ceiling`). Goal: at
//! least 200,000 jobs/s on a 2-core machine with the default recorder, so that a design's
//! rate measured on a real server (30–45k jobs/s for batched claims) is far below it.
//!
//! Each sample is one whole run of 1 s measured load: criterion is told one job per
//! iteration, and a run's time per job is its measured window over the jobs it completed,
//! so the throughput criterion prints is jobs/s. Compare ratios between runs of one machine,
//! not absolute figures.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dbq_bench::ceiling;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn ceiling(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let plan = ceiling::plan(Duration::from_secs(1), 4);
    let mut group = c.benchmark_group("ceiling");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(1));
    group.bench_function("jobs through the harness alone", |b| {
        b.iter_custom(|iters| {
            let dir = tempfile::tempdir().expect("a results directory");
            let measured = runtime
                .block_on(ceiling::measure(
                    &plan,
                    dir.path(),
                    &CancellationToken::new(),
                ))
                .expect("a run on the in-memory queue");
            assert!(measured.proof_ok, "{}", measured.line());
            Duration::from_secs_f64(iters as f64 / measured.completed_per_s.max(1.0))
        })
    });
    group.finish();
}

criterion_group!(benches, ceiling);
criterion_main!(benches);
