//! The limit rules on figures made by hand: each names its kind from its own evidence, and
//! the load machine only for a window that fell short.

use super::*;
use crate::metrics::HarnessSummary;
use crate::metrics::harness::Stall;
use crate::report::limit::{AwayFromStalls, Limit, LimitFigures, WaitShares};

fn machine() -> HarnessSummary {
    HarnessSummary {
        timer_late_pct: 0.1,
        timer_max_lag_ms: 4.0,
        process_cores: Some(0.3),
        machine_busy_pct: Some(40.0),
        machine_cores: 2,
        children_cores: Some(0.0),
        server_cores: Some(0.4),
        others_cores: Some(0.1),
        busiest_others: vec![("dockerd".into(), 0.02)],
        steal_pct: Some(0.0),
        stalls: Vec::new(),
    }
}

fn figures() -> LimitFigures {
    LimitFigures {
        window_s: 30.0,
        workers: 8,
        workers_busy_pct: Some(40.0),
        handler_pct_of_busy: Some(70.0),
        producer_connections: 16,
        producers_busy_pct: Some(5.0),
        machine: Some(machine()),
        claim_p50_ms: 0.2,
        ..LimitFigures::default()
    }
}

#[test]
fn busy_workers_in_their_handler_are_the_limit() {
    let f = LimitFigures {
        workers_busy_pct: Some(97.0),
        handler_pct_of_busy: Some(85.0),
        ..figures()
    };
    let (kind, evidence, action) = name(&f, true);
    assert_eq!(kind, LimitKind::Workers);
    assert!(evidence.contains("8 workers were busy 97%"), "{evidence}");
    assert!(action.contains("--consumers-for"), "{action}");
    // Whether or not the window held: they are what it runs against.
    assert_eq!(name(&f, false).0, LimitKind::Workers);
}

#[test]
fn a_group_that_stopped_reading_partitions_is_named_only_where_the_window_fell_short() {
    let f = LimitFigures {
        group_stall: Some(crate::report::stall::GroupStall {
            partitions: 12,
            longest_s: 31.0,
        }),
        ..figures()
    };
    let (kind, evidence, action) = name(&f, true);
    assert_eq!(kind, LimitKind::Group);
    assert!(
        evidence.contains("up to 12 partition(s) at once, for up to 31.0 s"),
        "{evidence}"
    );
    assert!(evidence.contains("workers 40% busy"), "{evidence}");
    assert!(action.contains("more workers will not help"), "{action}");
    assert_eq!(name(&f, false).0, LimitKind::None);
    // Saturated workers are the limit still.
    let busy = LimitFigures {
        workers_busy_pct: Some(97.0),
        handler_pct_of_busy: Some(85.0),
        ..f
    };
    assert_eq!(name(&busy, true).0, LimitKind::Workers);
}

#[test]
fn a_stall_names_the_load_machine_only_where_the_window_fell_short() {
    let mut m = machine();
    m.stalls = vec![
        Stall {
            at_s: 5.0,
            lag_ms: 1041.0,
        },
        Stall {
            at_s: 20.0,
            lag_ms: 1136.0,
        },
    ];
    let f = LimitFigures {
        machine: Some(m),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::LoadMachine);
    assert!(evidence.contains("2 second(s)"), "{evidence}");
    assert!(
        evidence.contains("1136 ms late (at 5 s, 20 s"),
        "{evidence}"
    );
    assert!(Limit::judge(f.clone(), true).disturbed());
    // A window that held through its stalls was not limited by them.
    assert_eq!(name(&f, false).0, LimitKind::None);
}

#[test]
fn a_stall_shorter_than_the_latency_around_it_does_not_name_the_load_machine() {
    let mut m = machine();
    m.stalls = vec![Stall {
        at_s: 18.0,
        lag_ms: 101.0,
    }];
    (m.server_cores, m.machine_busy_pct) = (Some(1.25), Some(84.0));
    // Seconds away from the stall had a p99 of a second: the queue fell behind by itself.
    let f = LimitFigures {
        machine: Some(m),
        away_from_stalls: Some(AwayFromStalls {
            seconds: 8,
            e2e_p50_ms: 975.0,
            e2e_p99_ms: 1038.0,
            e2e_max_ms: 1100.0,
        }),
        workers_busy_pct: Some(97.0),
        handler_pct_of_busy: Some(30.0),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_ne!(kind, LimitKind::LoadMachine, "{evidence}");
    assert!(
        evidence.contains("the harness stalled up to 101 ms"),
        "{evidence}"
    );
    assert!(!Limit::judge(f, true).disturbed());
}

#[test]
fn a_late_timer_is_the_load_machine_only_when_the_harness_had_the_most_cpu() {
    let mut m = machine();
    (m.timer_late_pct, m.machine_busy_pct) = (3.5, Some(88.0));
    (m.process_cores, m.server_cores) = (Some(0.31), Some(1.33));
    let f = LimitFigures {
        machine: Some(m.clone()),
        ..figures()
    };
    assert_ne!(name(&f, true).0, LimitKind::LoadMachine);
    (m.process_cores, m.server_cores) = (Some(1.2), Some(0.5));
    let f = LimitFigures {
        machine: Some(m),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::LoadMachine);
    assert!(evidence.contains("woke late 3.5%"), "{evidence}");
}

/// A library's worker processes are the harness's children but the system under test: when
/// they took the saturated machine (chancy's four processes, 1.2 cores at 300 jobs/s), the
/// limit is theirs, not the load generator's.
#[test]
fn a_librarys_workers_with_the_machine_are_the_workers_not_the_load_machine() {
    let mut m = machine();
    (m.timer_late_pct, m.machine_busy_pct) = (1.6, Some(91.0));
    (m.process_cores, m.children_cores, m.server_cores) = (Some(0.09), Some(1.13), Some(0.56));
    let f = LimitFigures {
        machine: Some(m),
        library_workers: true,
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::Workers, "{evidence}");
    assert!(
        evidence.contains("the library's worker processes used 1.13 cores"),
        "{evidence}"
    );
    // The harness's own workers (in its process, or its children) stay the load machine's.
    let f = LimitFigures {
        library_workers: false,
        ..f
    };
    assert_eq!(name(&f, true).0, LimitKind::LoadMachine);
}

#[test]
fn another_process_on_a_busy_machine_is_named_with_its_share() {
    let mut m = machine();
    (m.others_cores, m.machine_busy_pct) = (Some(1.02), Some(96.0));
    m.busiest_others = vec![("dbqhog".into(), 0.98)];
    let f = LimitFigures {
        machine: Some(m.clone()),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::OtherProcess);
    assert!(
        evidence.contains("another process (dbqhog, 0.98 cores"),
        "{evidence}"
    );
    // On a machine with room, it is only mentioned.
    m.machine_busy_pct = Some(60.0);
    let f = LimitFigures {
        machine: Some(m),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, false);
    assert_eq!(kind, LimitKind::None);
    assert!(
        evidence.contains("another process (dbqhog) 0.98 cores"),
        "{evidence}"
    );
}

#[test]
fn the_servers_waits_name_flush_and_locks() {
    let waits = |io: f64, lock: f64| WaitShares {
        observed: 400,
        client_pct: 20.0,
        cpu_pct: 80.0 - io - lock,
        io_pct: io,
        lock_pct: lock,
        other_pct: 0.0,
        top: Some(("IO:WALSync".into(), io)),
    };
    let busy = LimitFigures {
        workers_busy_pct: Some(98.0),
        handler_pct_of_busy: Some(10.0),
        ..figures()
    };
    let f = LimitFigures {
        waits: Some(waits(40.0, 5.0)),
        ..busy.clone()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::Io);
    assert!(
        evidence.contains("50% of the server's busy samples"),
        "{evidence}"
    );
    let f = LimitFigures {
        waits: Some(waits(5.0, 40.0)),
        ..busy.clone()
    };
    assert_eq!(name(&f, true).0, LimitKind::LockWaits);
    // Nothing over its threshold, with no machine figures to show room (a server elsewhere):
    // the largest of the server's classes, CPU here.
    let f = LimitFigures {
        waits: Some(waits(10.0, 10.0)),
        machine: None,
        ..busy
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::ServerCpu);
    assert!(
        evidence.contains("mostly in their statements"),
        "{evidence}"
    );
}

#[test]
fn a_server_with_the_machine_is_the_servers_cpu() {
    let mut m = machine();
    (m.server_cores, m.machine_busy_pct, m.process_cores) = (Some(1.7), Some(97.0), Some(0.25));
    let f = LimitFigures {
        machine: Some(m),
        ..figures()
    };
    let (kind, evidence, action) = name(&f, true);
    assert_eq!(kind, LimitKind::ServerCpu);
    assert!(
        evidence.contains("the server used 1.70 of the machine's 2 cores"),
        "{evidence}"
    );
    assert!(!action.contains("shares this machine"), "{action}");
}

#[test]
fn nothing_near_its_limit_is_none_found() {
    let (kind, evidence, action) = name(&figures(), false);
    assert_eq!(kind, LimitKind::None);
    assert!(evidence.contains("workers 40% busy"), "{evidence}");
    assert!(evidence.contains("server 0.40 cores"), "{evidence}");
    assert_eq!(action, "the queue had room at this rate");
    let (_, _, action) = name(&figures(), true);
    assert!(action.contains("fell short"), "{action}");
}

#[test]
fn a_claim_that_slowed_among_dead_tuples_names_vacuum() {
    let f = LimitFigures {
        claim_p50_ms: 0.6,
        claim_trend_ms: Some((0.30, 1.20)),
        table_bytes: Some((69_000_000, 102_000_000)),
        dead_tuples_max: 210_867,
        autovacuums: 1,
        waits: Some(WaitShares {
            observed: 400,
            client_pct: 60.0,
            cpu_pct: 8.0,
            io_pct: 32.0,
            ..WaitShares::default()
        }),
        ..figures()
    };
    let (kind, evidence, _) = name(&f, true);
    assert_eq!(kind, LimitKind::Vacuum, "{evidence}");
    assert!(
        evidence.contains("the claim slowed from 0.30 to 1.20 ms over the window"),
        "{evidence}"
    );
    assert!(evidence.contains("grew from 69 to 102 MB"), "{evidence}");
    // A claim that kept its pace leaves the flush waits to name.
    let steady = LimitFigures {
        claim_trend_ms: Some((0.30, 0.33)),
        ..f
    };
    assert_eq!(name(&steady, true).0, LimitKind::Io);
}

#[test]
fn workers_waiting_on_a_queue_with_room_are_the_workers() {
    // A broker: no wait events; the workers busy on their round trips, the machine with room.
    let mut m = machine();
    (m.server_cores, m.machine_busy_pct) = (Some(0.64), Some(54.0));
    let f = LimitFigures {
        workers_busy_pct: Some(99.0),
        handler_pct_of_busy: Some(35.0),
        machine: Some(m),
        ..figures()
    };
    let (kind, evidence, action) = name(&f, true);
    assert_eq!(kind, LimitKind::Workers, "{evidence}");
    assert!(
        evidence.contains("65% of it in their statements"),
        "{evidence}"
    );
    assert!(action.contains("add workers"), "{action}");
}
