//! `dbq-bench prove DIR`: the proof of a run whose harness died mid-run (SIGKILL, a crash of
//! a native client), from the journal it left in its results directory.

use super::shell::outln;
use dbq_bench::error::{ExitStatus, Failure};
use dbq_bench::run::{JournalProof, PROOF_FILE, prove_journal};
use std::path::Path;

/// Proves `dir`'s journal, prints what it found and writes `proof.json`: 0 when nothing was
/// lost or duplicated (jobs may still be queued), 1 when something was, 2 for a directory
/// without a journal or a server that cannot be reached with what was given.
pub async fn command(dir: &Path, url: Option<String>, drop_queue: bool) -> ExitStatus {
    let proved = match prove_journal(dir, url.as_deref(), drop_queue).await {
        Ok(p) => p,
        Err(Failure::Input(e)) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
        Err(e) => {
            eprintln!("error: prove {}: {e}", dir.display());
            return ExitStatus::RunFailed;
        }
    };
    print(dir, &proved);
    let path = dir.join(PROOF_FILE);
    let written = serde_json::to_vec_pretty(&proved)
        .map_err(std::io::Error::from)
        .and_then(|json| std::fs::write(&path, json));
    if let Err(e) = written {
        eprintln!("error: writing {}: {e}", path.display());
        return ExitStatus::RunFailed;
    }
    match proved.proof.sound {
        true => ExitStatus::Ok,
        false => ExitStatus::RunFailed,
    }
}

fn print(dir: &Path, p: &JournalProof) {
    outln!(
        "journal of {}: {} events, the last {:.1} s into the load{} ({} at {}, {})",
        dir.display(),
        p.events,
        p.last_event_s,
        if p.torn {
            "; its last line was cut short by the harness's death and left out"
        } else {
            ""
        },
        p.engine,
        p.server,
        p.namespace
    );
    outln!("accounting: {}", p.proof.verdict);
    if p.untracked > 0 {
        outln!(
            "  of the {} row(s) never seen committed, most are likely the producers' last inserts: committed after the journal's last write (it is written every few milliseconds)",
            p.untracked
        );
    }
    for what in &p.started {
        outln!("left running by the run (its harness died): {what}");
    }
    if p.dropped {
        outln!("dropped: the run's queue {}", p.namespace);
    } else {
        outln!(
            "kept: the run's queue {} (add --drop to remove it once proved)",
            p.namespace
        );
    }
    outln!("written: {}", dir.join(PROOF_FILE).display());
}
