//! The set-up never leaves the workers' statements planned on an empty table's statistics:
//! for every design, on PostgreSQL (the server's read counters of the queue table show what
//! the workers' prepared statements did) and on MariaDB (which plans every execution again,
//! so its claim probes are the workers' plans). `queue.stale_statistics` reproduces the
//! hazard on purpose, the report names it, and an ANALYZE mid-run ends it.

use crate::support::{
    SMALL, mariadb_plan, plan, plan_on, private_postgres_url, run_plan, scenario_dir,
};
use dbq_bench::report::Summary;
use dbq_bench::report::dbstats::DbStatsRow;

/// Faster than SMALL, so that the table outgrows what a planner rightly scans, with the
/// first vacuum held off the whole phase (an autoanalyze would mend a stale plan by itself).
const FRESH: [&str; 3] = [
    "producers.rate=600",
    "phases.0.duration=\"5s\"",
    "phases.0.faults=[{ kind = \"delay_vacuum\" }]",
];

/// Sequential scans of the queue table per claim statement over the measured phases.
fn scans_per_claim(s: &Summary) -> f64 {
    let r = s.table_reads.as_ref().expect("a database's table reads");
    let measured: Vec<_> = r.per_phase.iter().filter(|p| p.measured).collect();
    assert!(!measured.is_empty(), "{r:?}");
    let scans: i64 = measured.iter().map(|p| p.seq_scans).sum();
    let claims: u64 = measured.iter().map(|p| p.claim_statements).sum();
    assert!(claims > 100, "{r:?}");
    scans as f64 / claims as f64
}

/// Rows that sequential scans of the queue table (by everyone but the sampler) read from
/// `from_s` seconds into the load to the end of the phases, counted from the sample before
/// (the sampler's own reads are taken out when it makes them, and reach the server's
/// counters with the next sample).
fn scanned_rows_from(rows: &[DbStatsRow], from_s: f64) -> i64 {
    let first = rows.iter().position(|r| r.t_s >= from_s).unwrap();
    let last = rows.iter().rposition(|r| r.phase != "drain").unwrap();
    let read = |r: &DbStatsRow| r.sample.reads.expect("read counters").seq_rows;
    read(&rows[last]) - read(&rows[first.saturating_sub(1)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_design_s_claim_is_planned_on_an_empty_table() {
    let pgmq = format!("queue.dir=\"{}\"", scenario_dir("custom-pgmq"));
    // Designs whose table keeps finished jobs: once analyzed with rows in it, no scan reads
    // them (rotation's claim scans its empty partitions, which read nothing). The others
    // remove finished rows, so a planner rightly scans the few left; no design's statements
    // may scan a table of many rows.
    let designs: [(&[&str], bool); 10] = [
        (&["queue.variant=seed"], true),
        (&["queue.variant=batch"], true),
        (&["queue.variant=notify"], true),
        (&["queue.variant=plain_index"], true),
        (&["queue.variant=rotation"], true),
        (&["queue.variant=delete"], false),
        (&["queue.variant=archive"], false),
        (&["queue.variant=advisory_lock"], false),
        (&["queue.variant=visibility_timeout"], false),
        (&["queue.variant=custom", &pgmq], false),
    ];
    for (design, keeps_rows) in designs {
        let sets: Vec<&str> = design.iter().chain(&FRESH).copied().collect();
        let (o, _dir) = run_plan(&plan(SMALL, &sets), false).await;
        let s = &o.results.summary;
        let rows = &o.results.db_stats;
        assert_eq!(
            rows[0].sample.versions.unwrap().analyzes,
            0,
            "{design:?}: analyzed while empty"
        );
        let reads = s.table_reads.as_ref().unwrap();
        assert!(
            reads.statistics.contains("an ANALYZE 1.0 s into the load"),
            "{design:?}: {reads:?}"
        );
        assert_eq!(reads.scanned, None, "{design:?}");
        assert!(!s.verdict.table_scanned, "{design:?}: {}", s.verdict.text);
        if keeps_rows {
            // After the ANALYZE (and once the workers have reported what they did before:
            // a busy worker reports its counts once a second); the seed's claim and
            // completion never scan, from the first second.
            let from = if design == ["queue.variant=seed"] {
                0.0
            } else {
                3.5
            };
            let read = scanned_rows_from(rows, from);
            assert!(
                read <= 100,
                "{design:?}: scans read {read} rows from {from} s: {reads:?}"
            );
        }
    }
}

/// Statistics that follow the table: analyzed with the few hundred rows of the first
/// second, the batch design's claim and completion (`= ANY`) read a table that small
/// sequentially, and kept doing so as it grew to thousands, until autovacuum came; the
/// harness analyzes it again each time it doubles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_follow_a_fresh_table_as_it_grows() {
    let sets = [
        "queue.variant=batch",
        "queue.claim_batch=10",
        "producers.rate=300",
        "phases.0.duration=\"12s\"",
        "phases.0.faults=[{ kind = \"delay_vacuum\" }]",
    ];
    let (o, _dir) = run_plan(&plan(SMALL, &sets), false).await;
    let s = &o.results.summary;
    let reads = s.table_reads.as_ref().unwrap();
    assert!(reads.statistics.contains("more as it doubled"), "{reads:?}");
    assert_eq!(reads.scanned, None, "{reads:?}");
    assert!(!s.verdict.table_scanned, "{}", s.verdict.text);
}

/// Phases for the stale-statistics runs: the first vacuum held off from an idle stretch
/// before the load, so that the fault's ALTER TABLE comes while the table is still empty
/// (it makes every session plan again, and a plan made once rows are in is made for the
/// file's size then, which ends the hazard as an ANALYZE would); 5 s, as the fault's own
/// connection may be slow on a loaded machine. Then 600 jobs/s for 8 s, so that the table
/// outgrows a thousand rows however slowly a loaded machine inserts; `more` adds faults to
/// the load.
fn stale_phases(more: &str) -> String {
    format!(
        "phases=[{{ name = \"idle\", duration = \"5s\", rate = 0, measured = false, faults = [{{ kind = \"delay_vacuum\", for = \"13s\" }}] }}, {{ name = \"steady\", duration = \"8s\", rate = 600, faults = [{more}] }}]"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_statistics_make_the_claim_scan_until_an_analyze_ends_it() {
    // A server of its own: the hazard lasts only as long as the plans made on the empty
    // table, and the other tests' DDL on the shared server can make them again.
    let url = private_postgres_url();
    let phases = stale_phases("");
    let sets = ["queue.stale_statistics=true", phases.as_str()];
    let (o, _dir) = run_plan(&plan_on(&url, SMALL, &sets), false).await;
    let s = &o.results.summary;
    // The claim, prepared while the table was empty, scans once per execution; the
    // completion is first planned once rows are in (on the file's size then), so whether
    // its kept plan scans too depends on how many were in by its sixth execution.
    assert!(
        scans_per_claim(s) > 0.5,
        "{:?}\nfaults: {:?}",
        s.table_reads,
        s.faults.events
    );
    let scanned = s.table_reads.as_ref().and_then(|r| r.scanned.as_ref());
    let scanned = scanned.expect("the scan called out");
    assert!(s.verdict.table_scanned);
    assert!(
        s.verdict.text.ends_with(&scanned.sentence)
            && scanned
                .sentence
                .contains("measure that plan, not the queue"),
        "{}",
        s.verdict.text
    );
    let report = std::fs::read_to_string(o.out_dir.join("report.md")).unwrap();
    assert!(report.contains(&scanned.sentence), "report.md names it");

    // An ANALYZE 2 s in makes the workers plan again: their scans read nothing after it.
    let phases = stale_phases("{ kind = \"analyze\", after = \"2s\" }");
    let sets = ["queue.stale_statistics=true", phases.as_str()];
    let (o, _dir) = run_plan(&plan_on(&url, SMALL, &sets), false).await;
    let s = &o.results.summary;
    let fault = s
        .faults
        .events
        .iter()
        .find(|e| e.kind == "analyze")
        .unwrap();
    assert!(
        fault.detail.starts_with("ANALYZE of job_queue took"),
        "{fault:?}"
    );
    // The load starts with the idle phase: the ANALYZE comes 7 s in; a busy worker reports
    // what it did once a second, later on a loaded machine.
    let before = scanned_rows_from(&o.results.db_stats, 0.0);
    let after = scanned_rows_from(&o.results.db_stats, 9.5);
    assert!(
        before > 100_000,
        "scans read {before} rows before the ANALYZE"
    );
    assert!(after <= 100, "scans read {after} rows after the ANALYZE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_plans_every_claim_afresh_even_after_an_empty_table_s_analyze() {
    let custom = format!("queue.dir=\"{}\"", scenario_dir("custom-seed-mariadb"));
    let designs: [&[&str]; 6] = [
        &["queue.variant=seed"],
        &["queue.variant=batch"],
        &["queue.variant=delete"],
        &["queue.variant=archive"],
        &["queue.variant=visibility_timeout"],
        &["queue.variant=custom", &custom],
    ];
    for design in designs {
        let fresh = [
            "producers.rate=600",
            "phases.0.duration=\"3s\"",
            "queue.stale_statistics=true",
        ];
        let sets: Vec<&str> = design.iter().chain(&fresh).copied().collect();
        let (o, _dir) = run_plan(&mariadb_plan(SMALL, &sets), false).await;
        let s = &o.results.summary;
        let reads = s.table_reads.as_ref().expect("MariaDB's table reads");
        assert!(reads.source.contains("claim probes"), "{reads:?}");
        // A probe reading the whole table of more than a few rows would be called out.
        assert_eq!(reads.scanned, None, "{design:?}: {:?}", s.claim_probes);
        assert!(
            s.claim_probes.len() >= 2,
            "{design:?}: {:?}",
            s.claim_probes
        );
    }
}
