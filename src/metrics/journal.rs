//! The ledger made durable as the run goes: every event the ledger reads, one JSON line
//! each, appended to `journal.jsonl` in the results directory and flushed with every batch
//! the recorder reads (every few milliseconds). A harness that dies mid-run (a native
//! client's crash, SIGKILL, the machine) leaves the journal behind, and `dbq-bench prove DIR`
//! replays it into a ledger and proves it against the server. A run that ends writes its
//! proof into summary.json and removes its journal.

use super::event::Event;
use super::measurements::PhaseWindow;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The journal's file name in a results directory.
pub const FILE: &str = "journal.jsonl";

/// The journal's first line: what `prove` needs besides the events to rebuild the ledger and
/// reach the queue again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// The format's version (1).
    pub journal: u32,
    /// The engine's name, the server's URL as saved files show it (a password masked) and
    /// the run's namespace (schema, key prefix or topic prefix).
    pub engine: String,
    pub url: String,
    pub namespace: String,
    /// The step's windows on the run clock and where its load started.
    pub windows: Vec<PhaseWindow>,
    pub load_start_us: u64,
    /// What the run had started when its load began (a local server, a container, worker
    /// process groups), each with the command that removes it: a harness that dies leaves
    /// them running.
    #[serde(default)]
    pub started: Vec<String>,
}

/// The writer. A write that fails (a full disk) is said once and journaling stops: the run
/// goes on, its proof at the end does not depend on the journal.
pub struct Journal {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    dirty: bool,
}

impl Journal {
    /// A journal that writes nothing (a queue no other process can reach, a replay).
    pub fn off() -> Journal {
        Journal {
            path: PathBuf::new(),
            out: None,
            dirty: false,
        }
    }

    /// Creates `dir/journal.jsonl` with its header.
    pub fn create(dir: &Path, header: &Header) -> std::io::Result<Journal> {
        let path = dir.join(FILE);
        let mut out = BufWriter::with_capacity(1 << 16, File::create(&path)?);
        serde_json::to_writer(&mut out, header)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(Journal {
            path,
            out: Some(out),
            dirty: false,
        })
    }

    /// Appends `event` when the ledger reads it (samples and probes are left out).
    pub fn record(&mut self, event: &Event) {
        if !for_the_ledger(event) {
            return;
        }
        let Some(out) = self.out.as_mut() else { return };
        let written = serde_json::to_writer(&mut *out, event)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        self.dirty = true;
        if let Err(e) = written {
            self.give_up(e);
        }
    }

    /// Hands what was recorded to the operating system (it survives the process).
    pub fn flush(&mut self) {
        if !std::mem::take(&mut self.dirty) {
            return;
        }
        if let Some(Err(e)) = self.out.as_mut().map(|o| o.flush()) {
            self.give_up(e);
        }
    }

    fn give_up(&mut self, e: std::io::Error) {
        eprintln!(
            "warning: writing {}: {e}; the journal stops here (the run's own proof is unaffected)",
            self.path.display()
        );
        self.out = None;
    }
}

/// Samples, probes and pool sizes carry nothing the ledger reads; everything else is kept.
fn for_the_ledger(event: &Event) -> bool {
    !matches!(
        event,
        Event::HarnessSample(_)
            | Event::DbSample { .. }
            | Event::ClaimProbe { .. }
            | Event::Bystander { .. }
            | Event::EmptyPoll { .. }
            | Event::ProducerPool { .. }
            | Event::Analyzed { .. }
            | Event::TableProbe { .. }
    )
}

/// A journal read back: its header, its events, and whether its last line was cut short (the
/// harness died while writing it; that event is left out).
pub struct Replay {
    pub header: Header,
    pub events: Vec<Event>,
    pub torn: bool,
}

/// Reads `dir/journal.jsonl`; an error names the file and the line.
pub fn read(dir: &Path) -> Result<Replay, String> {
    let path = dir.join(FILE);
    let file = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = BufReader::new(file).lines();
    let at = |n: usize, e: &dyn std::fmt::Display| format!("{} line {n}: {e}", path.display());
    let first = lines
        .next()
        .ok_or_else(|| at(1, &"empty: no header"))?
        .map_err(|e| at(1, &e))?;
    let header: Header = serde_json::from_str(&first).map_err(|e| at(1, &e))?;
    if header.journal != 1 {
        return Err(at(
            1,
            &format!("journal version {} (this build reads 1)", header.journal),
        ));
    }
    let (mut events, mut torn) = (Vec::new(), false);
    let mut lines = lines.enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.map_err(|e| at(i + 2, &e))?;
        match serde_json::from_str(&line) {
            Ok(event) => events.push(event),
            // Only the last line may be cut short: the harness died while writing it.
            Err(_) if lines.peek().is_none() => torn = true,
            Err(e) => return Err(at(i + 2, &e)),
        }
    }
    Ok(Replay {
        header,
        events,
        torn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::measurements::WindowKind;

    #[test]
    fn a_journal_reads_back_what_the_ledger_needs_and_a_torn_last_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let header = Header {
            journal: 1,
            engine: "postgres".into(),
            url: "postgres://u:***@h/db".into(),
            namespace: "dbq_run_x".into(),
            windows: vec![PhaseWindow::new("steady", WindowKind::Phase, 0, 5, true)],
            load_start_us: 7,
            started: vec![],
        };
        let mut j = Journal::create(dir.path(), &header).unwrap();
        let kept = Event::Reaped {
            at_us: 3,
            jobs: vec![(42, false)],
            counted: true,
        };
        j.record(&kept);
        j.record(&Event::EmptyPoll {
            at_us: 4,
            busy_us: 1,
        });
        j.flush();
        let r = read(dir.path()).unwrap();
        assert_eq!(
            (r.header.namespace.as_str(), r.header.load_start_us),
            ("dbq_run_x", 7)
        );
        assert_eq!((r.events, r.torn), (vec![kept.clone()], false));
        // The harness died in the middle of a line.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap();
        f.write_all(b"{\"Reaped\":{\"at_us\":").unwrap();
        let r = read(dir.path()).unwrap();
        assert_eq!((r.events.len(), r.torn), (1, true));
    }
}
