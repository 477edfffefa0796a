//! Unit tests of `confirm`.

use super::*;

fn settings(v: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("autovacuum_naptime".into(), v.into())])
}

#[test]
fn auto_spans_three_naptimes_and_at_least_three_minutes() {
    let late = FirstVacuum::Late;
    let s = schedule(Confirm::Auto, late, &settings("60s")).unwrap();
    assert_eq!(s.held, Duration::from_secs(180));
    assert_eq!(s.first_naptime, Duration::from_secs(60));
    assert!(s.basis.contains("autovacuum_naptime (60s)"), "{}", s.basis);
    assert!(s.basis.contains("first vacuum after 1m"), "{}", s.basis);
    let s = schedule(Confirm::Auto, late, &settings("2min")).unwrap();
    assert_eq!(s.held, Duration::from_secs(360));
    assert!(s.basis.starts_with("3 × autovacuum_naptime (120s)"));
    let s = schedule(Confirm::Auto, FirstVacuum::Whenever, &BTreeMap::new()).unwrap();
    assert_eq!(s.held, Duration::from_secs(180));
    assert_eq!(s.first_naptime, NAPTIME_UNKNOWN);
    assert!(s.basis.contains("no autovacuum_naptime"), "{}", s.basis);
    assert!(s.basis.contains("whenever autovacuum came"), "{}", s.basis);
    assert_eq!(schedule(Confirm::Off, late, &settings("60s")), None);
    // A confirmation shorter than a naptime is its own screen.
    let set = Confirm::For(HumanDuration::from_secs(20));
    let s = schedule(set, late, &settings("60s")).unwrap();
    assert_eq!(
        (s.held, s.first_naptime),
        (Duration::from_secs(20), Duration::from_secs(20))
    );
    assert!(!s.screens());
}

/// Runs the ladder against a queue that holds every rate up to `capacity` (screens) and
/// `whole` (whole confirmations); the tries made.
fn climb(found: f64, capacity: f64, whole: f64, screens: bool) -> Vec<Next> {
    let mut ladder = Ladder::new(20_000.0);
    let mut next = Some(Ladder::first(found, screens));
    let mut tried = Vec::new();
    while let Some(t) = next {
        tried.push(t);
        assert!(tried.len() < 30, "{tried:?}");
        let held = match t {
            Next::Screen(r) => r <= capacity,
            Next::Whole(r) => r <= whole,
        };
        next = ladder.after(t, held);
    }
    tried
}

#[test]
fn screens_step_down_then_bisect_to_within_fifteen_percent() {
    use Next::{Screen, Whole};
    let tried = climb(1700.0, 400.0, 400.0, true);
    assert_eq!(
        tried,
        [
            Screen(1700.0),
            Screen(1020.0),
            Screen(612.0),
            Screen(367.0),
            Screen(474.0),
            Screen(417.0),
            Whole(367.0),
        ]
    );
    // The answer is within SCREEN_PRECISION below the true figure, wherever it lies.
    for capacity in [150.0, 333.0, 520.0, 999.0, 1650.0] {
        let tried = climb(1700.0, capacity, capacity, true);
        let Some(Whole(r)) = tried.last().copied() else {
            panic!("{tried:?}")
        };
        assert!(
            r <= capacity && r * SCREEN_PRECISION >= capacity,
            "{capacity}: {tried:?}"
        );
        assert!(tried.len() <= 10, "{capacity}: {tried:?}");
    }
}

fn ladder_after_two() -> Ladder {
    let mut ladder = Ladder::new(20_000.0);
    ladder.after(Next::Screen(800.0), true);
    ladder.after(Next::Screen(1000.0), true);
    ladder
}

#[test]
fn a_found_rate_that_holds_is_probed_above_before_it_is_confirmed() {
    use Next::{Screen, Whole};
    assert_eq!(
        climb(800.0, 900.0, 900.0, true),
        [Screen(800.0), Screen(1000.0), Screen(894.0), Whole(894.0)]
    );
    // The search said 1,700 (its steps spoiled by the overloaded ones before them); a
    // fresh queue holds 2,100: the confirmation finds it within the screens' precision.
    let tried = climb(1700.0, 2100.0, 2100.0, true);
    assert_eq!(tried.first(), Some(&Screen(1700.0)));
    let Some(Whole(r)) = tried.last().copied() else {
        panic!("{tried:?}")
    };
    assert!(r <= 2100.0 && r * SCREEN_PRECISION >= 2100.0, "{tried:?}");
    // The last try confirms the highest screen that held rather than screen again.
    assert_eq!(
        ladder_after_two().last_chance(Screen(1250.0)),
        Whole(1000.0)
    );
    assert_eq!(Ladder::new(900.0).last_chance(Screen(800.0)), Screen(800.0));
    // Never above the ceiling.
    let mut ladder = Ladder::new(900.0);
    assert_eq!(ladder.after(Screen(800.0), true), Some(Screen(900.0)));
    assert_eq!(ladder.after(Screen(900.0), true), Some(Whole(900.0)));
}

#[test]
fn whole_confirmations_that_break_step_down_by_fifteen_percent() {
    use Next::{Screen, Whole};
    // Screens held 400, but whole confirmations (later vacuum cycles) hold only 300.
    let tried = climb(400.0, 400.0, 300.0, true);
    assert_eq!(
        tried,
        [
            Screen(400.0),
            Screen(500.0),
            Screen(447.0),
            Whole(400.0),
            Whole(340.0),
            Whole(289.0)
        ]
    );
    // Without screens: the search's figure, then × 0.85 each time.
    let tried = climb(100.0, 0.0, 72.0, false);
    assert_eq!(tried, [Whole(100.0), Whole(85.0), Whole(72.0)]);
}

#[test]
fn nothing_below_one_job_per_second_is_tried() {
    let tried = climb(3.0, 0.0, 0.0, true);
    assert_eq!(
        tried,
        [Next::Screen(3.0), Next::Screen(2.0), Next::Screen(1.0)]
    );
}
