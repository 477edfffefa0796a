//! Where events go on their way to the recorder: the recorder's channel in the runner, a
//! worker process's stdout in a child (see [`EventSink`]).

use super::Event;
use std::io::Write;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where events go: the recorder, in the runner; in a worker process, its
/// stdout, one JSON line per event written before `send` returns, so that what a worker
/// reported before a SIGKILL reaches the runner (a claim reported after the job was
/// acknowledged, from a queue on its way, could otherwise die with the process, and the
/// runner would not know the job was in its hands).
#[derive(Clone)]
pub enum EventSink {
    Recorder(UnboundedSender<Event>),
    Lines(Arc<std::sync::Mutex<std::io::Stdout>>),
}

impl EventSink {
    /// Sends `event`; false once nobody reads (the recorder gone, the pipe closed).
    pub fn send(&self, event: Event) -> bool {
        match self {
            EventSink::Recorder(tx) => tx.send(event).is_ok(),
            EventSink::Lines(out) => {
                let mut line = serde_json::to_vec(&event).expect("events serialize");
                line.push(b'\n');
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                out.write_all(&line).and_then(|_| out.flush()).is_ok()
            }
        }
    }
}

impl From<UnboundedSender<Event>> for EventSink {
    fn from(tx: UnboundedSender<Event>) -> Self {
        EventSink::Recorder(tx)
    }
}
