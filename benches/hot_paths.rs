//! The harness's per-job hot paths besides the recorder (benches/recorder.rs): the ledger's
//! bookkeeping, making a job's payload, reading it back in a worker, and the open-loop
//! schedule. Each runs once or more per job, so a change that slows one of them shows here
//! before it shows as a lower ceiling in a run. Compare ratios between runs of one machine,
//! not absolute times.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use dbq_bench::backend::JobPayload;
use dbq_bench::fleet::jobs::JobFactory;
use dbq_bench::fleet::schedule::ArrivalSchedule;
use dbq_bench::metrics::Ledger;
use dbq_bench::scenario::load::{Overrides, parse};
use dbq_bench::scenario::{Arrival, EnvDefaults, Plan};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::hint::black_box;

const JOBS: u64 = 10_000;

fn plan() -> Plan {
    let text = "[producers]\nrate = 300\npayload_bytes = 128\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
    let scenario = parse("bench.toml", text, &Overrides::default()).expect("bench scenario");
    Plan::build(scenario, "bench.toml", "bench", &EnvDefaults::default()).expect("valid")
}

fn ledger(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger");
    group.throughput(Throughput::Elements(JOBS));
    group.bench_function("enqueued, claimed, completed per job", |b| {
        b.iter_batched(
            Ledger::default,
            |mut l| {
                for id in 1..=JOBS as i64 {
                    l.enqueued(black_box(id));
                    l.claimed(id, None);
                    l.completed(id);
                }
                l
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn payload(c: &mut Criterion) {
    let factory = JobFactory::new(&plan().producers);
    let mut rng = StdRng::seed_from_u64(1);
    let made = factory.make(&mut rng, "r1-p0-1".into(), 1_000_000, None);
    let mut group = c.benchmark_group("payload");
    group.throughput(Throughput::Elements(1));
    group.bench_function("make a 128-byte job", |b| {
        let mut n = 0u64;
        b.iter(|| {
            n += 1;
            factory.make(&mut rng, format!("r1-p0-{n}"), black_box(n), None)
        })
    });
    group.bench_function("read a payload back", |b| {
        b.iter(|| serde_json::from_str::<JobPayload>(black_box(&made.job.payload)).unwrap())
    });
    group.finish();
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(JOBS));
    for arrival in [Arrival::Constant, Arrival::Poisson] {
        group.bench_function(format!("{arrival:?} arrivals"), |b| {
            let mut rng = StdRng::seed_from_u64(1);
            b.iter(|| {
                let mut s = ArrivalSchedule::new((0, u64::MAX), 10_000.0, arrival, &mut rng);
                for _ in 0..JOBS {
                    black_box(s.next(&mut rng));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, ledger, payload, schedule);
criterion_main!(benches);
