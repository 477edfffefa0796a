//! Unit tests of `verdict`.

use super::*;

#[test]
fn jobs_in_flight_at_the_window_end_are_not_a_backlog() {
    // 44 jobs/s with a 100 ms median end to end: about 4 jobs are in the system at any
    // moment, so a gap of 11 over 176 jobs is within max(10, 2%) plus those.
    let in_flight = jobs_in_flight(44.0, 100.0);
    assert!((in_flight - 4.4).abs() < 1e-9);
    assert!(completions_kept_up(176, 165, in_flight));
    assert!(!completions_kept_up(176, 165, 0.0));
    // A real backlog is still one: 50 jobs behind is far more than 10 + 4.4.
    assert!(!completions_kept_up(176, 126, in_flight));
    // The tolerance grows with the window: 2% of 10,000 jobs.
    assert!(completions_kept_up(10_000, 9_800, 0.0));
    assert!(!completions_kept_up(10_000, 9_799, 0.0));
}

/// Consumers 100 jobs behind over a 4 s window, with the harness's timer late as given.
fn behind_with_timer_late(timer_late_pct: f64) -> Verdict {
    let counts = PhaseCounts {
        enqueued: 200,
        completed: 100,
        ..PhaseCounts::default()
    };
    let t = Throughput {
        enqueued_per_s: 50.0,
        completed_per_s: 25.0,
        offered_per_s: Some(50.0),
        window_s: 4.0,
    };
    let harness = crate::metrics::HarnessSummary {
        timer_late_pct,
        timer_max_lag_ms: 300.0,
        machine_cores: 2,
        ..Default::default()
    };
    let pace = ProducerPace::of(&counts, ProducerUse::default());
    let backlog = Backlog {
        start: Some(0),
        end: Some(100),
        peak: Some((100, 4)),
        allowed: 100,
        behind: None,
    };
    judge(&backlog, &t, &counts, 200.0, 200, Some(&harness), &pace)
}

#[test]
fn a_queue_behind_on_a_saturated_machine_says_the_machine_may_share_the_blame() {
    let v = behind_with_timer_late(40.0);
    assert_eq!(v.state, VerdictState::DidNotKeepUp);
    assert!(!v.consumers_kept_up);
    assert!(
        v.text
            .contains("consumers fell behind (100 more jobs enqueued than finished)")
            && v.text.contains("the machine was saturated")
            && v.text.contains("timer woke late 40.0% of the time"),
        "{}",
        v.text
    );
    let calm = behind_with_timer_late(0.2);
    assert_eq!(calm.state, VerdictState::DidNotKeepUp);
    assert!(!calm.text.contains("saturated"), "{}", calm.text);
}

/// A drain measured from a prefill: the backlog fell all along but 39,384 jobs still
/// waited at the end, and the saturated machine made the producers late. Not the load
/// generator's limit: the queue had not kept up.
#[test]
fn a_backlog_standing_at_the_end_is_not_kept_up_however_fast_it_fell() {
    let counts = PhaseCounts {
        enqueued: 10,
        completed: 1_940,
        sent_late: 5,
        ..PhaseCounts::default()
    };
    let t = Throughput {
        enqueued_per_s: 1.0,
        completed_per_s: 194.0,
        offered_per_s: Some(1.0),
        window_s: 10.0,
    };
    let harness = crate::metrics::HarnessSummary {
        timer_late_pct: 40.0,
        timer_max_lag_ms: 300.0,
        machine_cores: 2,
        ..Default::default()
    };
    let pace = ProducerPace::of(&counts, ProducerUse::default());
    let backlog = Backlog {
        start: Some(41_300),
        end: Some(39_384),
        peak: Some((41_300, 0)),
        allowed: 10,
        behind: None,
    };
    let v = judge(&backlog, &t, &counts, 50.0, 10, Some(&harness), &pace);
    assert_eq!(v.state, VerdictState::DidNotKeepUp, "{}", v.text);
    assert!(
        v.text.contains("39384 jobs still waited at the end"),
        "{}",
        v.text
    );
}

fn second(second: i64, depth: i64) -> TimelineRow {
    TimelineRow {
        second,
        phase: "fresh".into(),
        enqueued: 600,
        completed: 600,
        queue_depth: Some(depth),
        claim_statements: 600,
        ..TimelineRow::default()
    }
}

#[test]
fn a_run_that_fell_thousands_behind_and_recovered_did_not_keep_up() {
    // 600 jobs/s for 90 s: the backlog climbs from 20 to 9,800 between 25 s and 60 s,
    // then drains; start and end agree, the completion gap is nil.
    let rows: Vec<TimelineRow> = (0..90)
        .map(|t| {
            let depth = match t {
                25..=60 => 20 + (t - 24) * 272,
                61..=70 => 9_812 - (t - 60) * 980,
                _ => 20,
            };
            second(t, depth.max(20))
        })
        .collect();
    let refs: Vec<&TimelineRow> = rows.iter().collect();
    let backlog = Backlog::of(&refs, 600.0, 0.1);
    assert_eq!(backlog.allowed, 1260);
    assert_eq!(backlog.peak, Some((9812, 60)));
    let (seconds, from, until) = backlog.behind.unwrap();
    assert_eq!((from, until), (29, 68));
    assert_eq!(seconds, 40);
    let counts = PhaseCounts {
        enqueued: 54_000,
        completed: 54_000,
        ..PhaseCounts::default()
    };
    let t = Throughput {
        enqueued_per_s: 600.0,
        completed_per_s: 600.0,
        offered_per_s: Some(600.0),
        window_s: 90.0,
    };
    let pace = ProducerPace::of(&counts, ProducerUse::default());
    let v = judge(&backlog, &t, &counts, 20.0, 54_000, None, &pace);
    assert_eq!(v.state, VerdictState::DidNotKeepUp);
    assert_eq!(
        (v.queue_depth_start, v.queue_depth_end),
        (Some(20), Some(20))
    );
    assert!(
        v.text.contains(
            "the backlog rose to 9812 jobs at 60 s, 9792 above its start (at most 1260 allowed"
        ) && v
            .text
            .contains("that far behind for 40 s between 29 s and 68 s; it recovered by the end"),
        "{}",
        v.text
    );
    // The same run with the backlog's ordinary ripple keeps up.
    let calm: Vec<TimelineRow> = (0..90).map(|t| second(t, 20 + (t % 7) * 150)).collect();
    let refs: Vec<&TimelineRow> = calm.iter().collect();
    let v = judge(
        &Backlog::of(&refs, 600.0, 0.1),
        &t,
        &counts,
        20.0,
        54_000,
        None,
        &pace,
    );
    assert_eq!(v.state, VerdictState::KeptUp, "{}", v.text);
}
