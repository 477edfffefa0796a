//! Unit tests of `calibrate`.

use super::*;

fn sample(pgbench_per_s: f64, harness_per_s: f64, cpu: (f64, f64)) -> Sample {
    Sample {
        pgbench_per_s,
        harness_per_s,
        // The instrumentation costs a tenth of the bare rate.
        bare_per_s: harness_per_s / 0.9,
        pgbench_cpu_us: cpu.0,
        harness_cpu_us: cpu.1,
    }
}

#[test]
fn rows_give_medians_and_the_spread_and_name_the_counts_short_of_pgbench() {
    let four = Row::of(
        4,
        &[
            sample(1000.0, 900.0, (40.0, 50.0)),
            sample(1000.0, 1100.0, (40.0, 30.0)),
            sample(1000.0, 950.0, (40.0, 44.0)),
        ],
    );
    assert_eq!((four.ratio, four.ratio_range), (0.95, [0.9, 1.1]));
    assert_eq!((four.cpu_ratio, four.cpu_ratio_range), (1.1, [0.75, 1.25]));
    assert_eq!(four.harness_per_s, 950.0);
    assert!((four.instrumentation_cost - 0.1).abs() < 1e-9, "{four:?}");
    assert!(!four.at_parity());
    let one = Row::of(
        1,
        &[
            sample(100.0, 120.0, (40.0, 30.0)),
            sample(100.0, 100.0, (40.0, 40.0)),
        ],
    );
    assert_eq!((one.ratio, one.cpu_ratio), (1.1, 0.875));
    assert!(one.at_parity());
    let mut c = Calibration {
        server: "local".into(),
        duration_s: 10.0,
        prefill: 1000,
        repeats: 3,
        rows: vec![one],
        ceiling: None,
    };
    assert!(conclusion(&c).starts_with("At every connection count"));
    c.rows.push(four);
    assert_eq!(
        conclusion(&c),
        "Short of pgbench at 4 connection(s) (0.95× pgbench's jobs/s at 1.10× its CPU per job): near those rates the load generator takes CPU the server could use, so a capacity measured there is a lower bound (a run whose producers fall behind says \"limited by the load generator\")."
    );
    assert!(
        c.markdown()
            .contains("| 4 | 1000 | 950 | 0.95× | 0.90–1.10× | 40 | 44 | 1.10× | 0.75–1.25× | 1056 | 10.0% (10.0–10.0%) |")
    );
    assert!(
        instrumentation(&c).starts_with(
            "The harness's instrumentation in the database (completion audit and sampler) cost 10.0% at 1 connection(s) (110 against 122 jobs/s bare)"
        ),
        "{}",
        instrumentation(&c)
    );
}

#[test]
fn a_ratio_just_short_of_one_does_not_read_as_one() {
    assert_eq!(times(0.997), "0.997×");
    assert_eq!(times(1.0), "1.00×");
    assert_eq!(times(1.004), "1.004×");
    assert_eq!(times(0.95), "0.95×");
}

#[test]
fn pgbench_runs_the_seeds_statements() {
    let script = pgbench_script();
    assert!(script.starts_with("\\set id 0\nBEGIN;\n"), "{script}");
    assert!(
        script.contains("RETURNING id, type, payload \\aset\n"),
        "{script}"
    );
    assert!(script.contains("WHERE  id = :id;\nCOMMIT;\n"), "{script}");
}
