//! Property: any scenario values are either refused by validation with one line that names
//! the flag and key, or accepted — and an accepted plan's arithmetic (schedules, job mixes, handler
//! draws, phase ends on the run clock) never panics. Values are drawn from a fixed seed,
//! biased to the edges: zero, one, the integer limits, huge and tiny durations, NaN.

use dbq_bench::fleet::handler::SimulatedHandler;
use dbq_bench::fleet::jobs::JobFactory;
use dbq_bench::fleet::schedule::ArrivalSchedule;
use dbq_bench::scenario::{EnvDefaults, Overrides, Plan, ProviderKind, Rate, load_plan};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

const SCENARIO: &str = "scenarios/smoke.toml";

/// Keys a user can set, and the kind of value each takes.
const KEYS: &[(&str, Kind)] = &[
    ("producers.count", Kind::Int),
    ("producers.max_count", Kind::Int),
    ("producers.rate", Kind::Float),
    ("producers.prefill", Kind::Int),
    ("producers.payload_bytes", Kind::Int),
    ("producers.job_types", Kind::Weights),
    ("producers.priorities", Kind::Weights),
    ("producers.late_after", Kind::Duration),
    ("producers.poison_fraction", Kind::Float),
    ("producers.crash_fraction", Kind::Float),
    ("consumers.count", Kind::Int),
    ("consumers.poll_interval", Kind::Duration),
    ("consumers.restart_after", Kind::Duration),
    ("consumers.handler.error_rate", Kind::Float),
    ("consumers.handler.duration", Kind::Dist),
    ("queue.max_retries", Kind::Int),
    ("queue.backoff", Kind::Backoff),
    ("queue.batch_size", Kind::Int),
    ("drain.timeout", Kind::Duration),
    ("phases", Kind::Phases),
    ("seed", Kind::Int),
];

#[derive(Clone, Copy)]
enum Kind {
    Int,
    Float,
    Duration,
    Dist,
    Weights,
    Backoff,
    Phases,
}

fn int(rng: &mut StdRng) -> String {
    let edges = [
        "0",
        "1",
        "-1",
        "2",
        "255",
        "65536",
        "2147483647",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    if rng.random_bool(0.7) {
        edges[rng.random_range(0..edges.len())].into()
    } else {
        rng.random_range(-10i64..100_000).to_string()
    }
}

fn float(rng: &mut StdRng) -> String {
    let edges = [
        "0.0", "1.0", "-1.0", "0.5", "1e308", "-1e308", "1e-300", "nan", "inf", "-inf", "2.0",
    ];
    if rng.random_bool(0.7) {
        edges[rng.random_range(0..edges.len())].into()
    } else {
        format!("{}", rng.random_range(-5.0..5000.0))
    }
}

fn duration(rng: &mut StdRng) -> String {
    let edges = [
        "0s",
        "1ns",
        "1ms",
        "1s",
        "100h",
        "9999999999h",
        "18446744073709551615s",
        "-1s",
        "1.5s",
        "abc",
        "1d",
        "0.000001ms",
    ];
    format!("\"{}\"", edges[rng.random_range(0..edges.len())])
}

fn value(kind: Kind, rng: &mut StdRng) -> String {
    match kind {
        Kind::Int => int(rng),
        Kind::Float => float(rng),
        Kind::Duration => duration(rng),
        Kind::Dist => match rng.random_range(0..4) {
            0 => format!("{{ fixed = {} }}", duration(rng)),
            1 => format!(
                "{{ uniform = {{ min = {}, max = {} }} }}",
                duration(rng),
                duration(rng)
            ),
            2 => format!("{{ exponential = {{ mean = {} }} }}", duration(rng)),
            _ => format!(
                "{{ lognormal = {{ median = {}, sigma = {} }} }}",
                duration(rng),
                float(rng)
            ),
        },
        Kind::Weights => {
            let n = rng.random_range(0..4);
            let parts: Vec<String> = (0..n)
                .map(|i| format!("\"{}\" = {}", if i % 2 == 0 { i } else { -i }, int(rng)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        Kind::Backoff => format!(
            "{{ base = {}, factor = {}, cap = {} }}",
            duration(rng),
            float(rng),
            duration(rng)
        ),
        Kind::Phases => {
            let n = rng.random_range(0..3);
            let parts: Vec<String> = (0..n)
                .map(|i| {
                    format!(
                        "{{ name = \"p{i}\", duration = {}, rate = {} }}",
                        duration(rng),
                        if rng.random_bool(0.2) {
                            "\"max\"".into()
                        } else {
                            float(rng)
                        }
                    )
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// What a run computes from a plan before it touches a database, bounded in steps.
fn exercise(plan: &Plan) {
    let mut rng = StdRng::seed_from_u64(plan.seed);
    let factory = JobFactory::new(&plan.producers);
    for i in 0..3 {
        factory.make(&mut rng, format!("k{i}"), i, None);
    }
    let handler = SimulatedHandler::new(plan.consumers.handler);
    for _ in 0..20 {
        handler.draw(&mut rng);
    }
    let mut start_us: u64 = 0;
    for phase in &plan.phases {
        let end_us = start_us.saturating_add(phase.duration.as_micros() as u64);
        if let Rate::PerSecond(rate) = phase.rate
            && rate > 0.0
        {
            let window = (start_us, end_us);
            let mut s = ArrivalSchedule::new(window, rate, plan.producers.arrival, &mut rng);
            for _ in 0..50 {
                if s.next(&mut rng).is_none() {
                    break;
                }
            }
        }
        start_us = end_us;
    }
}

#[test]
fn any_values_are_refused_in_one_line_or_run_without_panicking() {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let (mut accepted, mut refused) = (0, 0);
    for case in 0..3000 {
        let n = rng.random_range(1..4);
        let sets: Vec<String> = (0..n)
            .map(|_| {
                let (key, kind) = KEYS[rng.random_range(0..KEYS.len())];
                format!("{key}={}", value(kind, &mut rng))
            })
            .collect();
        let overrides = Overrides {
            sets: sets.clone(),
            provider: Some(ProviderKind::Url),
            database_url: Some("postgres://u@127.0.0.1:5432/db".into()),
            ..Default::default()
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let plan = load_plan(Path::new(SCENARIO), &overrides, &EnvDefaults::default())?;
            exercise(&plan);
            Ok::<(), dbq_bench::error::InputError>(())
        }));
        match outcome {
            Err(_) => panic!("case {case}: {sets:?} panicked"),
            Ok(Ok(())) => accepted += 1,
            Ok(Err(e)) => {
                refused += 1;
                let line = e.to_string();
                assert_eq!(line.lines().count(), 1, "case {case}: {sets:?}: {line}");
                assert!(
                    !line.contains("expected u") && !line.contains("expected i"),
                    "case {case}: a Rust type in {line}"
                );
                // Bad input exits 2 (`InputError`); it names the flag that set the value.
                assert!(line.starts_with("--set "), "case {case}: {sets:?}: {line}");
            }
        }
    }
    // Both sides of validation were reached.
    assert!(
        accepted > 100 && refused > 100,
        "{accepted} accepted, {refused} refused"
    );
}
