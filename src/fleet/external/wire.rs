//! The handler protocol between the harness and a queue library's worker process, version 1:
//! its messages, how each is read, and how the harness's replies are written. Rules: one JSON
//! object per line (UTF-8, `\n`-terminated, at most [`MAX_LINE`] bytes) over the Unix stream
//! socket named by `DBQ_BENCH_SOCKET`; the worker speaks first (`hello`) and the harness
//! answers (`welcome`) before any job; every other line the worker sends is `start`, `done`
//! or `fail`, and only `start` gets a reply (`run`: what the handler does). A line that is not
//! one of these is an error the run stops on, naming the line; nothing here guesses.
//!
//! ```text
//! worker  → {"hello": {"protocol": 1, "library": "procrastinate 3.10.0", "settings": {…}}}
//! harness → {"welcome": {"protocol": 1}}
//! worker  → {"start": {"job": 17, "attempt": 1, "payload": {"k": "…", "t": 1200345}}}
//! harness → {"run": {"job": 17, "sleep_s": 0.012, "then": "done"}}      then: done|fail|crash
//! worker  → {"done": {"job": 17}}
//! worker  → {"fail": {"job": 18, "retrying": true}}
//! ```

use crate::backend::JobPayload;
use crate::metrics::JobId;
use serde::{Deserialize, Serialize};

/// The protocol version this harness speaks.
pub const PROTOCOL: u32 = 1;

/// The longest line the harness reads from a worker (a job's payload included).
pub const MAX_LINE: usize = 64 * 1024;

/// What a worker process says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FromWorker {
    /// Its first line: the protocol it speaks and, for the report, the library it runs.
    Hello {
        protocol: u32,
        #[serde(default)]
        library: Option<String>,
        /// The settings the glue read (the DBQ_BENCH_* it uses) and the library's own that
        /// move its figures (prefetch, batch sizes, polling), for the results.
        #[serde(default)]
        settings: std::collections::BTreeMap<String, serde_json::Value>,
    },
    /// The library handed it a job (`attempt`: the library's count, when it keeps one); the
    /// harness answers with what the handler does.
    Start {
        job: JobId,
        #[serde(default)]
        attempt: Option<u32>,
        #[serde(default)]
        payload: Option<JobPayload>,
    },
    /// The handler returned: the library is about to record the job done.
    Done { job: JobId },
    /// The handler raised the library's exception; `retrying`: the library will run it again
    /// (false: this was its last attempt, the job goes to the library's dead letter).
    Fail { job: JobId, retrying: bool },
}

/// What the harness answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    Welcome {
        protocol: u32,
    },
    Run {
        job: JobId,
        sleep_s: f64,
        then: Then,
    },
}

/// How a handler run ends, after its sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Then {
    /// Return normally.
    Done,
    /// Raise the library's own exception, so that its retry path runs.
    Fail,
    /// Kill its own process (SIGKILL): a job that crashes its worker.
    Crash,
}

/// Reads one line from a worker; the error says what is wrong with it, quoting its start.
pub fn read(line: &str) -> Result<FromWorker, String> {
    serde_json::from_str(line).map_err(|e| {
        let shown: String = line.chars().take(80).collect();
        let more = if line.chars().count() > 80 { "…" } else { "" };
        format!(
            "sent a line that is not protocol {PROTOCOL} ({e}): '{shown}{more}'; each line must be one of hello, start, done, fail (docs/libraries.md)"
        )
    })
}

/// One reply, as the line to write.
pub fn write(reply: &ToWorker) -> String {
    let mut line = serde_json::to_string(reply).expect("replies serialize");
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_reads_as_documented() {
        assert_eq!(
            read(r#"{"hello": {"protocol": 1, "library": "procrastinate 3.10.0"}}"#),
            Ok(FromWorker::Hello {
                protocol: 1,
                library: Some("procrastinate 3.10.0".into()),
                settings: Default::default(),
            })
        );
        let FromWorker::Hello { settings, .. } = read(
            r#"{"hello": {"protocol": 1, "library": "dramatiq-pg 0.12.0", "settings": {"prefetch": 1000, "DBQ_BENCH_CONCURRENCY": "4"}}}"#,
        )
        .unwrap() else {
            panic!("not a hello");
        };
        assert_eq!(
            (
                settings["prefetch"].as_u64(),
                settings["DBQ_BENCH_CONCURRENCY"].as_str()
            ),
            (Some(1000), Some("4"))
        );
        let FromWorker::Start {
            job,
            attempt,
            payload,
        } = read(r#"{"start": {"job": 17, "attempt": 2, "payload": {"k": "r-p0-1", "t": 1200, "crash": true}}}"#)
            .unwrap()
        else {
            panic!("not a start");
        };
        assert_eq!((job, attempt), (17, Some(2)));
        let payload = payload.unwrap();
        assert_eq!(
            (payload.t, payload.crash, payload.poison),
            (Some(1200), true, false)
        );
        assert_eq!(
            read(r#"{"done": {"job": 17}}"#),
            Ok(FromWorker::Done { job: 17 })
        );
        assert_eq!(
            read(r#"{"fail": {"job": 18, "retrying": false}}"#),
            Ok(FromWorker::Fail {
                job: 18,
                retrying: false
            })
        );
    }

    #[test]
    fn a_line_that_is_not_the_protocol_is_quoted_in_its_error() {
        let e = read("Traceback (most recent call last):").unwrap_err();
        assert!(e.contains("'Traceback (most recent call last):'"), "{e}");
        assert!(read(r#"{"done": {"job": "seventeen"}}"#).is_err());
        assert!(read(r#"{"done": {"job": 1, "extra": 2}}"#).is_err());
        assert!(read(r#"{"finish": {"job": 1}}"#).is_err());
    }

    #[test]
    fn replies_are_one_line_each() {
        assert_eq!(
            write(&ToWorker::Welcome { protocol: 1 }),
            "{\"welcome\":{\"protocol\":1}}\n"
        );
        assert_eq!(
            write(&ToWorker::Run {
                job: 3,
                sleep_s: 0.5,
                then: Then::Fail
            }),
            "{\"run\":{\"job\":3,\"sleep_s\":0.5,\"then\":\"fail\"}}\n"
        );
    }
}
