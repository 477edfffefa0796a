//! The seed's own statements as pgbench scripts: a worker (claim, handler as `\sleep`,
//! completion) and a producer (the insert), with pgbench's variables for the values the
//! harness binds.

use std::time::Duration;

pub(super) const CLAIM: &str = include_str!("../../backend/postgres/seed/claim.sql");
const COMPLETE: &str = include_str!("../../backend/postgres/seed/complete.sql");
const ENQUEUE: &str = include_str!("../../backend/postgres/seed/enqueue.sql");

/// The seed's worker: the claim in a transaction; an empty claim commits and sleeps the idle
/// poll, a job runs the handler (`\sleep`) and its completion, then commits.
pub(super) fn consume_script(handler: Duration, poll: Duration) -> String {
    let claim = statement(CLAIM);
    let complete = statement(COMPLETE).replace("$1", ":id");
    format!(
        "\\set id 0\nBEGIN;\n{claim} \\aset\n\\if :id = 0\nCOMMIT;\n\\sleep {} us\n\\else\n\\sleep {} us\n{complete};\nCOMMIT;\n\\endif\n",
        poll.as_micros(),
        handler.as_micros()
    )
}

/// The seed's insert with pgbench's variables for the values the harness binds.
pub(super) fn enqueue_script() -> String {
    let insert = statement(ENQUEUE)
        .replace("$1", ":type")
        .replace("$2", ":payload")
        .replace("$3", ":priority")
        .replace("$4", ":max_retries");
    format!("{insert};\n")
}

/// A statement file's SQL without its comment lines (pgbench names a statement by its first
/// line).
pub(super) fn statement(file: &str) -> String {
    file.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// A JSON payload of `bytes` bytes (at least its braces).
pub(super) fn padded_payload(bytes: usize) -> String {
    let pad = bytes.saturating_sub(r#"{"pad":""}"#.len());
    format!(r#"{{"pad":"{}"}}"#, "x".repeat(pad))
}
