//! The recorder's hot path: every enqueue, claim and completion of a run passes through
//! `Recorder::handle`. Speed goal: well above 100,000 jobs/s (3 events a job) on one core,
//! so the recorder is never what limits a run; with the journal (the ledger on disk as the
//! run goes) as well. Compare ratios between runs, not absolute times: benchmark machines are
//! noisy. Measured side by side (2026-12-06, 2 cores, a build beside it): 6.2 ms without the
//! journal, 14.3 ms with it per 10,000 jobs, i.e. 0.7 M jobs/s with the journal.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use dbq_bench::metrics::journal::{self, Journal};
use dbq_bench::metrics::{Event, LiveStats, PhaseWindow, Recorder, WindowKind};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const JOBS: u64 = 10_000;

fn events() -> Vec<Event> {
    let mut v = Vec::with_capacity(JOBS as usize * 3);
    for job in 0..JOBS as i64 {
        let t = 1_000_000 + job as u64 * 300;
        v.push(Event::Enqueued {
            job,
            intended_us: t,
            sent_us: t + 50,
            committed_us: t + 900,
            open_loop: true,
            poison: false,
            crash: false,
            behind: false,
        });
        v.push(Event::Claimed {
            job,
            intended_us: Some(t),
            started_us: Some(t + 1_000),
            claimed_us: t + 1_200,
            first: true,
            attempt: None,
        });
        v.push(Event::Completed {
            job,
            intended_us: Some(t),
            handler_us: 5_000,
            committed_us: t + 6_500,
            busy_us: 5_500,
        });
    }
    v
}

fn recorder() -> Recorder {
    let w = PhaseWindow::new;
    let windows = vec![
        w("prefill", WindowKind::Prefill, 0, 1_000_000, false),
        w("steady", WindowKind::Phase, 1_000_000, 61_000_000, true),
        w("drain", WindowKind::Drain, 61_000_000, u64::MAX, false),
    ];
    Recorder::new(
        windows,
        1_000_000,
        Duration::from_millis(5),
        Arc::new(LiveStats::new()),
    )
}

fn handle(c: &mut Criterion) {
    let evs = events();
    let mut group = c.benchmark_group("recorder");
    group.throughput(Throughput::Elements(JOBS));
    group.bench_function("handle 3 events per job", |b| {
        b.iter_batched(
            recorder,
            |mut r| {
                for e in &evs {
                    r.handle(black_box(e.clone()));
                }
                r
            },
            BatchSize::LargeInput,
        )
    });
    // The same with the journal (every event a JSON line in a file, flushed per batch of
    // 100, as the recorder's 5 ms batches would): what durability costs the recorder.
    let dir = tempfile::tempdir().unwrap();
    let header = journal::Header {
        journal: 1,
        engine: "postgres".into(),
        url: String::new(),
        namespace: "bench".into(),
        windows: Vec::new(),
        load_start_us: 0,
        started: Vec::new(),
    };
    group.bench_function("handle and journal 3 events per job", |b| {
        b.iter_batched(
            || (recorder(), Journal::create(dir.path(), &header).unwrap()),
            |(mut r, mut j)| {
                for (i, e) in evs.iter().enumerate() {
                    j.record(e);
                    if i % 100 == 99 {
                        j.flush();
                    }
                    r.handle(black_box(e.clone()));
                }
                j.flush();
                (r, j)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, handle);
criterion_main!(benches);
