//! The recorder's attribution rules, unit-tested on events made by hand.

use super::*;

fn windows() -> Vec<PhaseWindow> {
    let w = PhaseWindow::new;
    vec![
        w("prefill", WindowKind::Prefill, 0, 1_000_000, false),
        w("steady", WindowKind::Phase, 1_000_000, 3_000_000, true),
        w("drain", WindowKind::Drain, 3_000_000, u64::MAX, false),
    ]
}

/// What `rec` measures of the events sent on `rx` (its sender dropped).
async fn measured(rec: Recorder, rx: UnboundedReceiver<Event>) -> Measurements {
    let (_, snapshots) = tokio::sync::mpsc::unbounded_channel();
    rec.run(
        rx,
        snapshots,
        crate::clock::RunClock::start(),
        SystemTime::now(),
        crate::metrics::journal::Journal::off(),
    )
    .await
}

#[tokio::test]
async fn latency_belongs_to_the_phase_that_scheduled_the_job() {
    let live = Arc::new(LiveStats::new());
    let rec = Recorder::new(windows(), 1_000_000, Duration::from_millis(5), live.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // Job 7 was prefilled before the load.
    tx.send(Event::Enqueued {
        job: 7,
        intended_us: 500_000,
        sent_us: 500_000,
        committed_us: 600_000,
        open_loop: false,
        poison: false,
        crash: false,
        behind: false,
    })
    .unwrap();
    // Scheduled in "steady" at 2.0 s, sent 10 ms late, completed during the drain at 4.0 s.
    tx.send(Event::Enqueued {
        job: 1,
        intended_us: 2_000_000,
        sent_us: 2_010_000,
        committed_us: 2_011_000,
        open_loop: true,
        poison: false,
        crash: false,
        behind: false,
    })
    .unwrap();
    tx.send(Event::Claimed {
        job: 1,
        intended_us: Some(2_000_000),
        started_us: Some(3_999_000),
        claimed_us: 3_999_500,
        first: true,
        attempt: None,
    })
    .unwrap();
    tx.send(Event::Completed {
        job: 1,
        intended_us: Some(2_000_000),
        handler_us: 400,
        committed_us: 4_000_000,
        busy_us: 900,
    })
    .unwrap();
    tx.send(Event::Completed {
        job: 7,
        intended_us: Some(500_000),
        handler_us: 0,
        committed_us: 1_500_000,
        busy_us: 0,
    })
    .unwrap();
    drop(tx);
    let m = measured(rec, rx).await;

    let steady = &m.metrics[1];
    assert_eq!(steady.get(Metric::EndToEnd).len(), 1);
    assert!(steady.get(Metric::EndToEnd).max() >= 1_999_000);
    assert_eq!(steady.get(Metric::ScheduleLag).len(), 1);
    assert_eq!(m.counts[1].sent_late, 1);
    // Counts go by when things happened: the completion of job 1 is in the drain window.
    assert_eq!(m.counts[2].completed, 1);
    assert_eq!(m.counts[1].completed, 1); // the prefilled job 7, finished at 1.5 s
    assert_eq!(m.ledger.outstanding(), 0);
    assert_eq!(live.snapshot().completed, 2);
    // Timeline seconds are relative to the load start (1.0 s on the run clock).
    let seconds: Vec<i64> = m.timeline.iter().map(|r| r.second).collect();
    assert_eq!(seconds, vec![0, 1, 2, 3]);
    assert_eq!(m.timeline[3].phase, "drain");
    // The interval log holds one interval per metric per second with samples.
    // One interval per metric per second with samples (read back in tests/it/reports.rs).
    let text = String::from_utf8(m.hlog).unwrap();
    assert_eq!(text.matches("Tag=end_to_end,").count(), 2, "{text}");
}

#[tokio::test]
async fn a_workers_death_is_counted_by_how_it_died_without_its_last_words() {
    let live = Arc::new(LiveStats::new());
    let rec = Recorder::new(windows(), 1_000_000, Duration::from_millis(5), live);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for cause in [
        "SIGSEGV (rdkafka: …)",
        "SIGSEGV",
        "exit status 1 (error: x)",
    ] {
        tx.send(Event::WorkerCrashed {
            at_us: 2_000_000,
            slot: 0,
            jobs: Vec::new(),
            reported: Vec::new(),
            cause: cause.into(),
        })
        .unwrap();
    }
    drop(tx);
    let m = measured(rec, rx).await;
    let deaths: Vec<(&str, u64)> = m.errors.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        deaths,
        [
            ("worker died: SIGSEGV", 2),
            ("worker died: exit status 1", 1)
        ]
    );
    assert_eq!(m.counts[1].worker_crashes, 3);
}

#[tokio::test]
async fn a_stalled_group_in_a_sample_reaches_the_progress_counters() {
    let live = Arc::new(LiveStats::new());
    let rec = Recorder::new(windows(), 1_000_000, Duration::from_millis(5), live.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut sample = DbSample::default();
    sample.server.insert("stalled_partitions".into(), 3);
    sample.server.insert("stalled_for_ms".into(), 4_500);
    tx.send(Event::DbSample {
        at_us: 1_500_000,
        sample: Box::new(sample),
    })
    .unwrap();
    drop(tx);
    measured(rec, rx).await;
    let snap = live.snapshot();
    assert_eq!((snap.stalled_partitions, snap.stalled_for_ms), (3, 4_500));
}
