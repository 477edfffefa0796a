//! Unit tests of `fresh`.

use super::*;

#[test]
fn pgbench_runs_the_seed_s_worker_and_insert() {
    let s = consume_script(Duration::from_millis(1), Duration::from_millis(100));
    assert!(
        s.starts_with("\\set id 0\nBEGIN;\nWITH next_job AS ("),
        "{s}"
    );
    assert!(
        s.contains("RETURNING id, type, payload \\aset\n\\if :id = 0\nCOMMIT;\n\\sleep 100000 us\n\\else\n\\sleep 1000 us\n"),
        "{s}"
    );
    assert!(s.contains("WHERE  id = :id;\nCOMMIT;\n\\endif\n"), "{s}");
    let e = enqueue_script();
    assert!(
        e.contains("VALUES (:type, :payload::jsonb, :priority, :max_retries)"),
        "{e}"
    );
    assert_eq!(padded_payload(128).len(), 128);
    assert!(serde_json::from_str::<serde_json::Value>(&padded_payload(128)).is_ok());
}

fn side(completed_per_s: f64, kept_up: bool) -> Side {
    Side {
        completed_per_s,
        kept_up,
        ..Side::default()
    }
}

#[test]
fn a_difference_beyond_noise_is_named_and_given_to_the_harness_when_it_did_worse() {
    let r = FreshRow::of(600.0, 1, side(600.0, true), side(598.0, true));
    assert!(r.agree, "{}", r.finding);
    assert!(
        r.finding
            .starts_with("600 jobs/s: the harness and pgbench agree, both kept up")
    );
    let r = FreshRow::of(600.0, 1, side(600.0, true), side(420.0, false));
    assert!(!r.agree);
    assert!(
        r.finding
            .ends_with("a difference beyond noise, and the harness's."),
        "{}",
        r.finding
    );
    let r = FreshRow::of(600.0, 1, side(500.0, false), side(600.0, true));
    assert!(
        r.finding
            .contains("pgbench fell behind where the harness kept up"),
        "{}",
        r.finding
    );
}
