//! Where the library's progress lines and warnings go: one sink, chosen by the command
//! (`--quiet` or not), instead of printing from wherever something happens.

use std::sync::{Arc, Mutex};

/// Receives the lines a long piece of work reports as it goes.
pub trait StatusSink: Send + Sync {
    /// A progress line (`provisioning PostgreSQL (local)…`, `load started…`).
    fn line(&self, text: &str);
    /// Something the user must hear even when quiet (a teardown that failed).
    fn warn(&self, text: &str);
}

/// A sink shared by everything a command runs.
pub type Status = Arc<dyn StatusSink>;

/// Lines on stderr, each starting `dbq-bench: `.
pub struct Stderr;

impl StatusSink for Stderr {
    fn line(&self, text: &str) {
        eprintln!("dbq-bench: {text}");
    }

    fn warn(&self, text: &str) {
        eprintln!("dbq-bench: warning: {text}");
    }
}

/// Warnings only.
pub struct Quiet;

impl StatusSink for Quiet {
    fn line(&self, _text: &str) {}

    fn warn(&self, text: &str) {
        Stderr.warn(text);
    }
}

/// Every line kept, for tests that check what a command said.
#[derive(Default)]
pub struct Kept(pub Mutex<Vec<String>>);

impl StatusSink for Kept {
    fn line(&self, text: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }

    fn warn(&self, text: &str) {
        self.line(&format!("warning: {text}"));
    }
}

/// The sink of a command: stderr, or warnings only when `quiet`.
pub fn for_command(quiet: bool) -> Status {
    if quiet {
        Arc::new(Quiet)
    } else {
        Arc::new(Stderr)
    }
}
