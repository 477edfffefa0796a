//! The live progress line: phase, elapsed time, enqueue/complete rates, queue depth and
//! schedule lag, refreshed four times a second on stderr (hidden when stderr is not a
//! terminal). Reads the recorder's live counters; never touches the database.

use crate::clock::RunClock;
use crate::metrics::{LiveStats, PhaseWindow, WindowKind};
use crate::status::Status;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub struct Progress {
    bar: ProgressBar,
    status: Status,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn start(
        live: Arc<LiveStats>,
        windows: Vec<PhaseWindow>,
        clock: RunClock,
        visible: bool,
        status: Status,
    ) -> Progress {
        let target = if visible {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let stop = CancellationToken::new();
        let task = tokio::spawn(update(bar.clone(), live, windows, clock, stop.clone()));
        Progress {
            bar,
            status,
            stop,
            task: Some(task),
        }
    }

    /// A status line: above the progress line while it shows, else to the status sink.
    pub fn println(&self, msg: &str) {
        if self.bar.is_hidden() {
            self.status.line(msg);
        } else {
            self.bar.println(format!("dbq-bench: {msg}"));
        }
    }

    pub async fn finish(mut self) {
        self.stop.cancel();
        if let Some(t) = self.task.take() {
            t.await.ok();
        }
        self.bar.finish_and_clear();
    }
}

async fn update(
    bar: ProgressBar,
    live: Arc<LiveStats>,
    windows: Vec<PhaseWindow>,
    clock: RunClock,
    stop: CancellationToken,
) {
    let phases: Vec<&PhaseWindow> = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .collect();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut last = live.snapshot();
    let mut last_at = clock.now_us();
    let (mut enq_rate, mut done_rate) = (0.0, 0.0);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let now = clock.now_us();
        let snap = live.snapshot();
        if now - last_at >= 1_000_000 {
            let dt = (now - last_at) as f64 / 1e6;
            enq_rate = (snap.enqueued - last.enqueued) as f64 / dt;
            done_rate = (snap.completed - last.completed) as f64 / dt;
            last = snap;
            last_at = now;
        }
        let (label, elapsed, total) = match phases
            .iter()
            .position(|w| now >= w.start_us && now < w.end_us)
        {
            Some(i) => {
                let w = phases[i];
                (
                    format!("phase {}/{} {}", i + 1, phases.len(), w.name),
                    now - w.start_us,
                    w.end_us - w.start_us,
                )
            }
            None if phases.first().is_some_and(|w| now < w.start_us) => {
                ("starting".to_string(), 0, 0)
            }
            None => (
                format!("draining ({} jobs left)", snap.outstanding.max(0)),
                0,
                0,
            ),
        };
        let time = if total > 0 {
            format!(" {}/{}s", elapsed / 1_000_000, total / 1_000_000)
        } else {
            String::new()
        };
        let depth = if snap.queue_depth >= 0 {
            snap.queue_depth.to_string()
        } else {
            "?".into()
        };
        let stalled = match snap.stalled_partitions {
            0 => String::new(),
            n => format!(
                " | group stalled: {n} partition(s) unread for {:.0} s",
                snap.stalled_for_ms as f64 / 1e3
            ),
        };
        bar.set_message(format!(
            "{label}{time} | enqueue {enq_rate:.0}/s | complete {done_rate:.0}/s | depth {depth}{stalled} | lag max {:.1} ms | done {} of {}",
            snap.lag_max_us as f64 / 1000.0,
            snap.completed + snap.dead_lettered,
            snap.enqueued
        ));
        bar.tick();
    }
}
