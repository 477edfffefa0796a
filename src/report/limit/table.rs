//! A run's limits phase by phase as one table (the same cells in Markdown and HTML): the
//! named limit and the figures it was read from.

use super::Limit;
use crate::report::summary::Summary;

/// Header and rows: one row per load phase with a limit, then the measured phases together.
pub fn table(s: &Summary) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let mut rows: Vec<Vec<String>> = s
        .phases
        .iter()
        .filter_map(|p| Some(row(&p.name, p.limit.as_ref()?)))
        .collect();
    if let Some(l) = &s.limit {
        rows.push(row("measured phases", l));
    }
    if rows.is_empty() {
        return None;
    }
    let header = [
        "window",
        "limit",
        "workers busy %",
        "in handler %",
        "producers busy %",
        "server cores",
        "harness cores",
        "others cores (busiest)",
        "machine busy %",
        "steal %",
        "timer late % (stalls)",
        "server waits: cpu / lock / io / client %",
        "dead tuples (max)",
    ]
    .map(String::from)
    .to_vec();
    Some((header, rows))
}

fn row(window: &str, l: &Limit) -> Vec<String> {
    let f = &l.figures;
    let pct = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.0}"));
    let cores = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.2}"));
    let m = f.machine.as_ref();
    let others = m.and_then(|m| m.others_cores).map_or("–".into(), |o| {
        match m.and_then(|m| m.busiest_other()) {
            Some((name, c)) => format!("{o:.2} ({name} {c:.2})"),
            None => format!("{o:.2}"),
        }
    });
    let timer = m.map_or("–".into(), |m| {
        let worst = m.stalls.iter().map(|s| s.lag_ms).fold(0.0, f64::max);
        match m.stalls.len() {
            0 => format!("{:.1}", m.timer_late_pct),
            n => format!("{:.1} ({n}, up to {worst:.0} ms)", m.timer_late_pct),
        }
    });
    let waits = f.waits.as_ref().map_or("–".into(), |w| {
        format!(
            "{:.0} / {:.0} / {:.0} / {:.0}",
            w.cpu_pct, w.lock_pct, w.io_pct, w.client_pct
        )
    });
    vec![
        window.to_string(),
        l.kind.label().to_string(),
        pct(f.workers_busy_pct),
        pct(f.handler_pct_of_busy),
        pct(f.producers_busy_pct),
        cores(m.and_then(|m| m.server_cores)),
        cores(m.and_then(|m| m.load_machine_cores())),
        others,
        pct(m.and_then(|m| m.machine_busy_pct)),
        m.and_then(|m| m.steal_pct)
            .map_or("–".into(), |v| format!("{v:.1}")),
        timer,
        waits,
        f.dead_tuples_max.to_string(),
    ]
}
