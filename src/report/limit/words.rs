//! The rules that name a window's limit from its figures, in order, each with its evidence
//! and its action in the words every format uses. The first rule whose figures cross its
//! threshold names the limit; the rest of the figures follow in a short list.

use super::{LimitFigures, LimitKind, Thresholds as T};

/// A rule: the limit it names, its evidence and its action, when its figures say so.
type Named = Option<(LimitKind, String, String)>;

/// The limit of a window with `f`'s figures; `fell_short`: it broke its objective or fell
/// behind.
pub(super) fn name(f: &LimitFigures, fell_short: bool) -> (LimitKind, String, String) {
    let rules: [fn(&LimitFigures, bool) -> Named; 11] = [
        workers,
        stalled,
        stolen,
        harness_late,
        other_process,
        group,
        vacuum,
        lock_waits,
        io_waits,
        server_cpu,
        producers,
    ];
    let (kind, evidence, action) = rules
        .iter()
        .find_map(|rule| rule(f, fell_short))
        .or_else(|| statements(f, fell_short))
        .unwrap_or_else(|| none(f, fell_short));
    let context = context(f, kind);
    let evidence = match context.is_empty() {
        true => evidence,
        false => format!("{evidence} ({context})"),
    };
    (kind, evidence, action)
}

fn cores(x: f64) -> String {
    format!("{x:.2}")
}

/// The harness stalled in a window that fell short, and the stalls explain it: the seconds
/// away from them had a p99 below the longest stall.
/// A stall of 100 ms or more is the load machine's whoever else used its CPU: sharing cores
/// delays the harness's timer by a few ms, tens on a saturated machine, not by that much.
fn stalled(f: &LimitFigures, fell_short: bool) -> Named {
    let m = f.machine.as_ref().filter(|_| fell_short)?;
    let worst = m.stalls.iter().map(|s| s.lag_ms).fold(0.0, f64::max);
    if f.away_from_stalls.is_some_and(|a| a.e2e_p99_ms > worst) {
        return None;
    }
    let at: Vec<String> = m
        .stalls
        .iter()
        .take(4)
        .map(|s| format!("{:.0} s", s.at_s))
        .collect();
    let more = m.stalls.len().saturating_sub(4);
    let at = at.join(", ")
        + &if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
    (!m.stalls.is_empty()).then(|| {
        (
            LimitKind::LoadMachine,
            format!(
                "the harness stalled in {} second(s) of this window: its 10 ms timer woke up to {worst:.0} ms late (at {at} into it), holding back every clock it keeps at once",
                m.stalls.len()
            ),
            "not the queue's limit: measure the window again, on a quieter or larger load machine"
                .into(),
        )
    })
}

/// The hypervisor took the machine's time.
fn stolen(f: &LimitFigures, fell_short: bool) -> Named {
    let steal = f
        .machine
        .as_ref()?
        .steal_pct
        .filter(|s| fell_short && *s >= T::STEAL_PCT)?;
    Some((
        LimitKind::LoadMachine,
        format!("the hypervisor took {steal:.0}% of the machine's time (steal)"),
        "measure on a machine whose cores are its own".into(),
    ))
}

/// The harness's timer ran late: it had too little CPU, and neither the server nor anyone
/// else used more of the machine than the harness did.
fn harness_late(f: &LimitFigures, fell_short: bool) -> Named {
    let m = f.machine.as_ref().filter(|m| fell_short && m.saturated())?;
    // Late because someone else had the CPU: whoever used the most of it.
    if let Some(named) = other_process(f, true) {
        return Some(named);
    }
    if server_has_the_machine(f) {
        return server_cpu(f, true);
    }
    if let Some(named) = library_cpu(f, m) {
        return Some(named);
    }
    let harness = m.load_machine_cores().unwrap_or(0.0);
    if m.server_cores.is_some_and(|s| s > harness) {
        return None;
    }
    Some((
        LimitKind::LoadMachine,
        format!(
            "the harness's 10 ms timer woke late {:.1}% of the time (it used {} cores{})",
            m.timer_late_pct,
            cores(m.load_machine_cores().unwrap_or(0.0)),
            m.machine_busy_pct
                .map_or(String::new(), |b| format!(", the machine {b:.0}% busy"))
        ),
        "the harness is saturated: run it on a machine of its own, or with more cores".into(),
    ))
}

/// A library's worker processes (the harness's children, but the system under test, not
/// the load generator) took more of the saturated machine than the harness itself.
fn library_cpu(f: &LimitFigures, m: &crate::metrics::HarnessSummary) -> Named {
    let workers = m.children_cores.filter(|_| f.library_workers)?;
    let harness = m.process_cores.unwrap_or(0.0);
    (workers > harness).then(|| {
        (
            LimitKind::Workers,
            format!(
                "the library's worker processes used {} cores of the machine's {} ({}the harness {}): the library's own CPU, while the harness's timer woke late {:.1}% of the time",
                cores(workers),
                m.machine_cores,
                m.machine_busy_pct
                    .map_or(String::new(), |b| format!("the machine {b:.0}% busy, ")),
                cores(harness),
                m.timer_late_pct,
            ),
            "give the library's workers more cores (or a machine of their own), or measure fewer processes per core"
                .into(),
        )
    })
}

/// The workers were busy with their own handlers nearly all the time, even leaving out the
/// time the harness stalled (a stalled worker's handler runs late too).
fn workers(f: &LimitFigures, _: bool) -> Named {
    let stalled_pct = f.machine.as_ref().map_or(0.0, |m| {
        100.0 * m.stalls.iter().map(|s| s.lag_ms).sum::<f64>() / 1e3 / f.window_s.max(1e-9)
    });
    let busy = f
        .workers_busy_pct
        .filter(|b| b - stalled_pct >= T::SATURATED_PCT)?;
    let handler = f
        .handler_pct_of_busy
        .filter(|h| *h >= T::HANDLER_OWNS_PCT)?;
    let whose = if f.library_workers {
        " (their handlers' time, as the library's workers report it)"
    } else {
        ""
    };
    Some((
        LimitKind::Workers,
        format!(
            "the {} workers were busy {busy:.0}% of the window, {handler:.0}% of it in their handler{whose}",
            f.workers
        ),
        "add workers (`consumers.count`); `capacity --consumers-for RATE` finds how many a rate needs"
            .into(),
    ))
}

/// Jobs were due while every producer connection was busy.
fn producers(f: &LimitFigures, fell_short: bool) -> Named {
    (fell_short && f.producers_behind_pct >= 1.0).then(|| {
        (
            LimitKind::Producers,
            format!(
                "{:.1}% of the jobs were due while all {} producer connections were busy{}",
                f.producers_behind_pct,
                f.producer_connections,
                f.producers_busy_pct
                    .map_or(String::new(), |b| format!(" ({b:.0}% busy with inserts)"))
            ),
            "allow more producer connections (`producers.max_count`), or see why inserts are slow (the enqueue latency)"
                .into(),
        )
    })
}

/// Another process took the CPU of a busy machine, at least half as much as the server
/// did: without it the queue would have had that much more.
fn other_process(f: &LimitFigures, fell_short: bool) -> Named {
    let m = f.machine.as_ref()?;
    let server = m.server_cores.unwrap_or(0.0);
    let others = m
        .others_cores
        .filter(|o| *o >= T::OTHERS_CORES && *o >= 0.5 * server)?;
    let busy = m.machine_busy_pct.unwrap_or(0.0);
    if !(busy >= T::SATURATED_PCT || (fell_short && busy >= 80.0)) {
        return None;
    }
    Some((
        LimitKind::OtherProcess,
        format!(
            "{} used {} of the machine's {} cores besides the harness and the server, the machine {busy:.0}% busy",
            busiest(m).unwrap_or_else(|| "other processes".into()),
            cores(others),
            m.machine_cores
        ),
        "stop it, or measure on a quiet machine: the queue had less CPU than the machine has"
            .into(),
    ))
}

/// A window that fell short while the workers' group left partitions unread: records
/// waited with workers free to take them.
fn group(f: &LimitFigures, fell_short: bool) -> Named {
    let g = f.group_stall.filter(|_| fell_short)?;
    Some((
        LimitKind::Group,
        format!(
            "the group stopped reading up to {} partition(s) at once, for up to {:.1} s: their records waited uncommitted while no member read them",
            g.partitions, g.longest_s
        ),
        "not the workers' speed: the group held partitions unassigned (a rebalance waiting for members that left without a goodbye) or with a member that stopped; more workers will not help, shorter session and poll timeouts or fewer member deaths will".into(),
    ))
}

/// `another process (yes, 0.98 cores)`.
fn busiest(m: &crate::metrics::HarnessSummary) -> Option<String> {
    let (name, c) = m.busiest_other()?;
    Some(format!(
        "another process ({name}, {} cores of them)",
        cores(*c)
    ))
}

/// Dead tuples piled up and the claim was slow, or slowed over the window (at least twice
/// as slow in its last quarter as in its first).
fn vacuum(f: &LimitFigures, fell_short: bool) -> Named {
    let slowed = f
        .claim_trend_ms
        .filter(|(from, to)| *to >= 2.0 * from && *to >= T::SLOWED_CLAIM_MS);
    let slow = f.claim_p50_ms >= T::SLOW_CLAIM_MS || slowed.is_some();
    (fell_short && slow && f.dead_tuples_max >= T::MANY_DEAD_TUPLES).then(|| {
        let claim = match slowed {
            Some((from, to)) => format!("the claim slowed from {from:.2} to {to:.2} ms over the window"),
            None => format!("the claim's median was {:.2} ms", f.claim_p50_ms),
        };
        let grew = f.table_bytes.filter(|(a, b)| b > a).map_or(String::new(), |(a, b)| {
            format!(
                ", the table with its indexes grew from {:.0} to {:.0} MB",
                a as f64 / 1e6,
                b as f64 / 1e6
            )
        });
        (
            LimitKind::Vacuum,
            format!(
                "{claim} while dead tuples reached {} ({} autovacuum(s) in the window){grew}{}",
                f.dead_tuples_max,
                f.autovacuums,
                f.rows_read_per_claim
                    .map_or(String::new(), |r| format!(", {r:.1} rows read per claim"))
            ),
            "vacuum the queue table more often (its autovacuum settings), or a design that leaves no dead rows behind (delete, rotation)"
                .into(),
        )
    })
}

/// The server's sessions waited on locks.
fn lock_waits(f: &LimitFigures, fell_short: bool) -> Named {
    let pct = f
        .server_wait_pct(|w| w.lock_pct)
        .filter(|p| *p >= T::WAITS_PCT)?;
    (fell_short || workers_on_statements(f)).then(|| {
        (
            LimitKind::LockWaits,
            format!(
                "the run's sessions waited on locks in {pct:.0}% of the server's busy samples{}",
                top_wait(f)
            ),
            "fewer writers on the same rows: a claim that skips locked rows, or claims in batches"
                .into(),
        )
    })
}

/// The server's sessions waited on WAL flushes or I/O.
fn io_waits(f: &LimitFigures, fell_short: bool) -> Named {
    let pct = f
        .server_wait_pct(|w| w.io_pct)
        .filter(|p| *p >= T::WAITS_PCT)?;
    (fell_short || workers_on_statements(f)).then(|| {
        (
            LimitKind::Io,
            format!(
                "the run's sessions waited on WAL flush or I/O in {pct:.0}% of the server's busy samples{}{}",
                top_wait(f),
                match f.checkpoints {
                    0 => String::new(),
                    n => format!(", {n} checkpoint(s) in the window"),
                }
            ),
            "commits wait for the disk: faster storage, fewer commits per job (claims in batches), or `synchronous_commit = off` where losing the last commits in a crash is acceptable"
                .into(),
        )
    })
}

fn top_wait(f: &LimitFigures) -> String {
    f.waits
        .as_ref()
        .and_then(|w| w.top.as_ref())
        .map_or(String::new(), |(e, p)| format!(" (most: {e}, {p:.0}%)"))
}

/// The workers were busy, mostly on their statements rather than their handlers.
fn workers_on_statements(f: &LimitFigures) -> bool {
    f.workers_busy_pct.is_some_and(|b| b >= T::SATURATED_PCT)
        && f.handler_pct_of_busy
            .is_some_and(|h| h < T::HANDLER_OWNS_PCT)
}

/// The machine was saturated and the server's processes used more of it than the harness
/// and than everyone else: the harness's timer ran late because the server had the CPU.
fn server_has_the_machine(f: &LimitFigures) -> bool {
    let Some(m) = &f.machine else { return false };
    let Some(server) = m.server_cores else {
        return false;
    };
    server >= m.load_machine_cores().unwrap_or(0.0)
        && server >= m.others_cores.unwrap_or(0.0)
        && m.machine_busy_pct.unwrap_or(0.0) >= T::SATURATED_PCT
}

/// The server's CPU, or the machine's when the server and the harness share it.
fn server_cpu(f: &LimitFigures, fell_short: bool) -> Named {
    let m = f.machine.as_ref()?;
    let n = m.machine_cores as f64;
    let busy = f.machine_busy_pct().unwrap_or(0.0);
    let server_full = m.server_cores.is_some_and(|s| s >= 0.8 * n);
    if !(server_full || busy >= T::SATURATED_PCT || (fell_short && server_has_the_machine(f))) {
        return None;
    }
    let harness = m.load_machine_cores().unwrap_or(0.0);
    if let Some(server) = m.server_cores.filter(|s| harness > *s) {
        return Some((
            LimitKind::LoadMachine,
            format!(
                "the harness used {} cores, more than the server's {}, of the machine's {} ({busy:.0}% busy)",
                cores(harness),
                cores(server),
                m.machine_cores
            ),
            "the harness needs the machine more than the queue does: run it on a machine of its own"
                .into(),
        ));
    }
    let evidence = match m.server_cores {
        Some(s) => format!(
            "the server used {} of the machine's {} cores, the harness {}, the machine {busy:.0}% busy",
            cores(s),
            m.machine_cores,
            cores(harness)
        ),
        None => format!(
            "the machine's {} cores were {busy:.0}% busy (the harness used {}; the server's processes are not the run's to measure)",
            m.machine_cores,
            cores(harness)
        ),
    };
    let shares = if harness >= 0.3 {
        "; the harness shares this machine: with one of its own, the server would have it all"
    } else {
        ""
    };
    Some((
        LimitKind::ServerCpu,
        evidence,
        format!("more CPU for the server, or less work per job (claims in batches){shares}"),
    ))
}

/// The workers waited on their statements, and no other rule named why. With the server
/// and the machine short of saturation, the workers themselves: each runs one job at a time,
/// so round trips to the queue bound them (more workers keep more jobs in flight). Else the
/// largest of the server's own wait classes.
fn statements(f: &LimitFigures, fell_short: bool) -> Named {
    if !(fell_short && workers_on_statements(f)) {
        return None;
    }
    let room = f.machine.as_ref().is_some_and(|m| {
        m.machine_busy_pct.unwrap_or(100.0) < T::SATURATED_PCT
            && m.server_cores
                .is_none_or(|s| s < 0.8 * m.machine_cores as f64)
    });
    let busy = f.workers_busy_pct.unwrap_or(0.0);
    if room {
        return Some((
            LimitKind::Workers,
            format!(
                "the {} workers were busy {busy:.0}% of the window, {:.0}% of it in their statements (claim median {:.2} ms), one job at a time each, while the server and the machine had room",
                f.workers,
                100.0 - f.handler_pct_of_busy.unwrap_or(0.0),
                f.claim_p50_ms
            ),
            "add workers (`consumers.count`) to keep more jobs in flight, or claim several jobs at a time"
                .into(),
        ));
    }
    let w = f.waits.as_ref()?;
    let (kind, what) = [
        (LimitKind::ServerCpu, w.cpu_pct, "working (no wait)"),
        (LimitKind::LockWaits, w.lock_pct, "waiting on locks"),
        (LimitKind::Io, w.io_pct, "waiting on WAL flush or I/O"),
    ]
    .into_iter()
    .max_by(|a, b| a.1.total_cmp(&b.1))
    .map(|(k, p, what)| (k, format!("{what} in {:.0}% of them", w.of_server_pct(p))))?;
    Some((
        kind,
        format!(
            "the {} workers were busy {busy:.0}% of the window, mostly in their statements (claim median {:.2} ms); the server's sessions were {what}",
            f.workers, f.claim_p50_ms
        ),
        "the server is slow to answer: see its waits and CPU in report.html".into(),
    ))
}

/// No rule named a limit.
fn none(f: &LimitFigures, fell_short: bool) -> (LimitKind, String, String) {
    let action = match fell_short {
        true => {
            "the window fell short, but no measured resource was near its limit: see the timeline (report.html) for when it fell behind"
        }
        false => "the queue had room at this rate",
    };
    let _ = f;
    let evidence = "no resource was near its limit".to_string();
    (LimitKind::None, evidence, action.into())
}

/// The other figures in a few words, those of the named limit left out.
fn context(f: &LimitFigures, named: LimitKind) -> String {
    let mut parts = Vec::new();
    if named != LimitKind::Workers
        && let Some(b) = f.workers_busy_pct
    {
        parts.push(format!("workers {b:.0}% busy"));
    }
    if let Some(m) = &f.machine {
        let worst = m.stalls.iter().map(|s| s.lag_ms).fold(0.0, f64::max);
        if named != LimitKind::LoadMachine && worst > 0.0 {
            parts.push(format!("the harness stalled up to {worst:.0} ms"));
        }
        if named != LimitKind::ServerCpu
            && let Some(s) = m.server_cores
        {
            parts.push(format!("server {} cores", cores(s)));
        }
        if !matches!(named, LimitKind::ServerCpu | LimitKind::LoadMachine)
            && let Some(h) = m.load_machine_cores()
        {
            parts.push(format!("harness {} cores", cores(h)));
        }
        if named != LimitKind::OtherProcess
            && let Some((name, c)) = m.busiest_other().filter(|(_, c)| *c >= 0.25)
        {
            parts.push(format!("another process ({name}) {} cores", cores(*c)));
        }
        if !matches!(named, LimitKind::ServerCpu | LimitKind::OtherProcess)
            && let Some(b) = m.machine_busy_pct
        {
            parts.push(format!("machine {b:.0}% busy"));
        }
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests;
