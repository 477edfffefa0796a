//! A custom design's own words, from its `design.toml`: the queue table's name, the column
//! holding each job's state and the design's state names mapped to the harness's (waiting,
//! in flight, done, dead letter), the column counting attempts and what it counts, and the
//! payload's column. Rules: every name is a plain identifier or word (it goes into SQL the
//! harness writes, never a value a user types at run time); a state name belongs to one
//! harness state; a status word a statement returns that is neither the harness's nor a
//! declared state fails in one line naming the file, never becomes a zero or a rollback.

use super::super::job::JobStatus;
use super::super::seam::DesignError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The file a design declares itself in.
pub const DESIGN_FILE: &str = "design.toml";

/// What a design's `design.toml` declares.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// The design's name, as benchmarks and comparisons call it (its directory's name when
    /// not given): stays the same across edits and checkouts.
    pub name: Option<String>,
    /// The queue table (what statistics, ANALYZE, VACUUM and the audit look at).
    #[serde(default = "default_table")]
    pub table: String,
    /// The column holding the harness's JSON payload (`payload`).
    #[serde(default = "default_payload")]
    pub payload: String,
    pub states: Option<States>,
    pub attempts: Option<Attempts>,
    pub priority: Option<Priority>,
    /// The channel the design notifies when a job becomes available (PostgreSQL's
    /// LISTEN/NOTIFY): idle workers wake on it as well as on their poll.
    pub wake_up: Option<String>,
    /// How often tick.sql runs (1 s when not given), as written: `"500ms"`, `"2s"`.
    #[serde(default, rename = "tick_interval")]
    tick_interval_text: Option<String>,
    /// The same, read.
    #[serde(skip)]
    pub tick_interval: Option<std::time::Duration>,
    /// The design's workers are a queue library's own processes.
    pub worker: Option<WorkerSection>,
}

/// `[worker]`: the command that starts one of a library's worker processes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSection {
    /// The program and its arguments, run in the design's directory.
    pub command: Vec<String>,
    /// Jobs one process runs at once (1 when not given).
    #[serde(default = "one")]
    pub concurrency: u32,
    /// How long a process may take to say hello (`"30s"` when not given).
    #[serde(default = "thirty_seconds")]
    pub connect_timeout: String,
}

fn one() -> u32 {
    1
}

fn thirty_seconds() -> String {
    "30s".into()
}

impl WorkerSection {
    /// The section, checked, as the plan carries it.
    fn workers(&self, dir: &Path) -> Result<crate::backend::queue::ExternalWorkers, String> {
        if self.command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(
                "[worker] command is empty; give the program and its arguments, e.g. [\"python3\", \"worker.py\"]".into(),
            );
        }
        if !(1..=1000).contains(&self.concurrency) {
            return Err(format!(
                "[worker] concurrency must be between 1 and 1000, got {}",
                self.concurrency
            ));
        }
        let connect_timeout = humantime::parse_duration(&self.connect_timeout)
            .ok()
            .filter(|d| !d.is_zero() && d.as_secs() <= 600)
            .ok_or_else(|| {
                format!(
                    "[worker] connect_timeout = \"{}\" is not a duration between 0s and 10m (e.g. \"30s\")",
                    self.connect_timeout
                )
            })?;
        Ok(crate::backend::queue::ExternalWorkers {
            command: self.command.clone(),
            dir: dir.to_path_buf(),
            concurrency: self.concurrency,
            connect_timeout,
        })
    }
}

fn default_table() -> String {
    "job_queue".into()
}

fn default_payload() -> String {
    "payload".into()
}

/// The state column and the design's names for each of the harness's states.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct States {
    pub column: String,
    pub waiting: Vec<String>,
    /// Waiting after a failure, for its back-off (counted as waiting).
    #[serde(default)]
    pub retrying: Vec<String>,
    pub in_flight: Vec<String>,
    pub done: Vec<String>,
    pub dead_letter: Vec<String>,
    /// A view the design's schema.sql makes, showing every job once in the harness's words
    /// (`id`, `status`, `retry_count`, `payload`), for a library that keeps a job's end
    /// elsewhere than its table (a log, an archive) or whose ids are not the harness's: the
    /// proof and the sampler read it instead of the harness's view over `table`.
    pub view: Option<String>,
}

/// The column counting a job's attempts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempts {
    pub column: String,
    pub counts: AttemptsCount,
}

/// A design's own priorities: which end runs first, and the values it allows.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Priority {
    pub first: PriorityFirst,
    pub min: i32,
    pub max: i32,
}

/// Which priority a design runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorityFirst {
    Highest,
    Lowest,
}

impl Priority {
    /// The design's value for each of the harness's priorities (`ours`, ascending: the last
    /// runs first), by rank: the most urgent takes the design's most urgent value, the next
    /// the one after it. An error when the range has fewer values than the scenario uses.
    pub fn map(&self, ours: &[i32]) -> Result<std::collections::BTreeMap<i32, i32>, String> {
        let room = i64::from(self.max) - i64::from(self.min) + 1;
        if ours.len() as i64 > room {
            return Err(format!(
                "[priority] allows {room} value(s) ({} to {}), but producers.priorities uses {} ({}); give the scenario at most {room}",
                self.min,
                self.max,
                ours.len(),
                ours.iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(ours
            .iter()
            .rev()
            .enumerate()
            .map(|(rank, &p)| {
                let rank = rank as i32;
                let value = match self.first {
                    PriorityFirst::Highest => self.max - rank,
                    PriorityFirst::Lowest => self.min + rank,
                };
                (p, value)
            })
            .collect())
    }
}

/// What an attempt column counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptsCount {
    /// Failed attempts (the seed's `retry_count`): the proof settles failure updates whose
    /// commit it could not see by it.
    Failures,
    /// Claims (River's `attempt`): a reap counts too, so the proof cannot settle failures
    /// by it and does not try.
    Claims,
}

/// The status words the design's statements may return: the harness's own, and the names
/// its declaration maps to them.
#[derive(Debug, Clone, Default)]
pub struct StateWords {
    declared: BTreeMap<String, JobStatus>,
}

impl StateWords {
    /// The harness's status for `word`, a statement of `file` returned; an unknown word is
    /// an error naming the file and the words allowed.
    pub fn status(&self, file: &str, word: &str) -> Result<JobStatus, String> {
        JobStatus::parse(word)
            .or_else(|| self.declared.get(word).copied())
            .ok_or_else(|| {
                let mut allowed: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
                let harness = allowed.clone();
                allowed.extend(
                    self.declared
                        .keys()
                        .map(String::as_str)
                        .filter(|w| !harness.contains(w)),
                );
                format!(
                    "{file}: returned the status '{word}', which is neither the harness's nor a state {DESIGN_FILE} declares (allowed: {}); declare it under [states] or return one of those",
                    allowed.join(", ")
                )
            })
    }
}

impl Declaration {
    /// Reads `dir`'s design.toml; the seed's table and payload when there is none.
    pub fn read(dir: &Path) -> Result<Declaration, DesignError> {
        let path = dir.join(DESIGN_FILE);
        let fail = |reason: String| DesignError {
            file: path.display().to_string(),
            reason,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Declaration {
                    name: None,
                    table: default_table(),
                    payload: default_payload(),
                    states: None,
                    attempts: None,
                    priority: None,
                    wake_up: None,
                    tick_interval_text: None,
                    tick_interval: None,
                    worker: None,
                });
            }
            Err(e) => return Err(fail(format!("cannot be read: {e}"))),
        };
        let mut d: Declaration =
            toml::from_str(&text).map_err(|e| fail(e.message().trim().replace('\n', " ")))?;
        d.check().map_err(fail)?;
        Ok(d)
    }

    fn check(&mut self) -> Result<(), String> {
        if let Some(text) = &self.tick_interval_text {
            let every = humantime::parse_duration(text)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("tick_interval = \"{text}\" is not a duration above zero (e.g. \"500ms\", \"2s\")"))?;
            self.tick_interval = Some(every);
        }
        if let Some(name) = &self.name {
            let ok = (1..=64).contains(&name.chars().count())
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_. ".contains(c));
            if !ok {
                return Err(format!(
                    "name = {name:?}: use 1 to 64 letters, digits, spaces, '-', '_' or '.' (it names the design's benchmark series)"
                ));
            }
        }
        identifier("table", &self.table)?;
        if let Some(channel) = &self.wake_up {
            identifier("wake_up", channel)?;
        }
        if let Some(p) = &self.priority
            && p.min > p.max
        {
            return Err(format!(
                "[priority] min = {} is above max = {}",
                p.min, p.max
            ));
        }
        identifier("payload", &self.payload)?;
        if let Some(a) = &self.attempts {
            identifier("attempts.column", &a.column)?;
        }
        let Some(s) = &self.states else {
            return match self.worker {
                Some(_) => Err("[worker] needs [states]: the proof and the sampler read the library's own table through the states it maps to waiting, in flight, done and dead letter".into()),
                None => Ok(()),
            };
        };
        identifier("states.column", &s.column)?;
        if let Some(view) = &s.view {
            identifier("states.view", view)?;
        }
        let mut seen = BTreeMap::new();
        for (key, names) in s.lists() {
            if names.is_empty() && key != "states.retrying" {
                return Err(format!(
                    "{key}: names no state; each harness state needs at least one of the design's"
                ));
            }
            for name in names {
                word(key, name)?;
                if let Some(other) = seen.insert(name.as_str(), key) {
                    return Err(format!(
                        "{key}: the state '{name}' is also under {other}; a state belongs to one harness state"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The library's worker processes, when the design declares `[worker]`.
    pub fn external_workers(
        &self,
        dir: &Path,
    ) -> Result<Option<crate::backend::queue::ExternalWorkers>, DesignError> {
        let Some(w) = &self.worker else {
            return Ok(None);
        };
        w.workers(dir).map(Some).map_err(|reason| DesignError {
            file: dir.join(DESIGN_FILE).display().to_string(),
            reason,
        })
    }

    /// The status words its statements may return.
    pub fn words(&self) -> StateWords {
        let mut declared = BTreeMap::new();
        if let Some(s) = &self.states {
            for (status, names) in s.by_status() {
                declared.extend(names.iter().map(|n| (n.clone(), status)));
            }
        }
        StateWords { declared }
    }
}

impl States {
    fn lists(&self) -> [(&'static str, &Vec<String>); 5] {
        [
            ("states.waiting", &self.waiting),
            ("states.retrying", &self.retrying),
            ("states.in_flight", &self.in_flight),
            ("states.done", &self.done),
            ("states.dead_letter", &self.dead_letter),
        ]
    }

    fn by_status(&self) -> [(JobStatus, &Vec<String>); 5] {
        [
            (JobStatus::Pending, &self.waiting),
            (JobStatus::Pending, &self.retrying),
            (JobStatus::Processing, &self.in_flight),
            (JobStatus::Done, &self.done),
            (JobStatus::DeadLetter, &self.dead_letter),
        ]
    }

    /// The names of `status`, as SQL string literals: `'completed', 'discarded'`.
    pub fn literals(&self, status: JobStatus) -> String {
        let names: Vec<String> = self
            .by_status()
            .into_iter()
            .filter(|(s, _)| *s == status)
            .flat_map(|(_, names)| names.iter().map(|n| format!("'{n}'")))
            .collect();
        names.join(", ")
    }
}

/// An engine's statements for a design that declares its states: the view the proof reads
/// (`dbq_bench_job_state`: id, status in the harness's words, retry_count, payload, or the
/// design's own [`States::view`], whose name then replaces it in the statements), the
/// audit's trigger on the state column, and the proof's and sampler's statements. The
/// templates' `{table}`, `{state}`, `{waiting}`, `{in_flight}`, `{done}`, `{dead_letter}`,
/// `{failures}` and `{payload}` are filled from the declaration.
pub struct DeclaredSql {
    pub view: &'static str,
    pub trigger: &'static str,
    pub pending_count: &'static str,
    pub status_counts: &'static str,
    pub job_status: &'static str,
    pub ledger_check: &'static str,
    pub untracked: &'static str,
    pub jobs_by_key: &'static str,
    /// The engine's SQL for "no value" as an attempt count.
    pub no_count: &'static str,
}

impl DeclaredSql {
    /// `template` with the declaration's names in place.
    pub fn fill(&self, template: &str, d: &Declaration, states: &States) -> String {
        let failures = match &d.attempts {
            Some(a) if a.counts == AttemptsCount::Failures => a.column.as_str(),
            _ => self.no_count,
        };
        let waiting = states.literals(JobStatus::Pending);
        template
            .replace("{table}", &d.table)
            .replace("{state}", &states.column)
            .replace("{waiting}", &waiting)
            .replace("{in_flight}", &states.literals(JobStatus::Processing))
            .replace("{done}", &states.literals(JobStatus::Done))
            .replace("{dead_letter}", &states.literals(JobStatus::DeadLetter))
            .replace("{failures}", failures)
            .replace("{payload}", &d.payload)
    }
}

/// A table or column name: letters, digits and `_`, not starting with a digit.
fn identifier(key: &str, name: &str) -> Result<(), String> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{key} = \"{name}\" is not a plain name (letters, digits and _, not starting with a digit)"
        )),
    }
}

/// A state name: letters, digits, `_` and `-`.
fn word(key: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{key}: '{name}' is not a plain state name (letters, digits, _ and -)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Declaration, String> {
        let mut d: Declaration = toml::from_str(text).map_err(|e| e.message().to_string())?;
        d.check().map(|()| d)
    }

    const RIVER: &str = r#"
table = "river_job"
payload = "args"
[states]
column = "state"
waiting = ["available", "scheduled"]
retrying = ["retryable"]
in_flight = ["running"]
done = ["completed"]
dead_letter = ["discarded", "cancelled"]
[attempts]
column = "attempt"
counts = "claims"
"#;

    #[test]
    fn a_library_s_state_names_map_to_the_harness_s() {
        let d = parse(RIVER).unwrap();
        let words = d.words();
        assert_eq!(words.status("f", "retryable"), Ok(JobStatus::Pending));
        assert_eq!(words.status("f", "running"), Ok(JobStatus::Processing));
        assert_eq!(words.status("f", "cancelled"), Ok(JobStatus::DeadLetter));
        assert_eq!(
            words.status("f", "done"),
            Ok(JobStatus::Done),
            "the harness's own"
        );
        let unknown = words.status("fail.sql", "available ").unwrap_err();
        assert!(
            unknown.starts_with("fail.sql: returned the status 'available '"),
            "{unknown}"
        );
        assert!(
            unknown.contains("allowed: pending, processing, done, dead_letter, available"),
            "{unknown}"
        );
        let states = d.states.unwrap();
        assert_eq!(
            states.literals(JobStatus::DeadLetter),
            "'discarded', 'cancelled'"
        );
        assert_eq!(
            states.literals(JobStatus::Pending),
            "'available', 'scheduled', 'retryable'"
        );
    }

    #[test]
    fn a_design_s_name_is_a_plain_series_name() {
        let named = parse(&format!("name = \"acme jobs-2\"\n{RIVER}")).unwrap();
        assert_eq!(named.name.as_deref(), Some("acme jobs-2"));
        let e = parse(&format!("name = \"a/b\"\n{RIVER}")).unwrap_err();
        assert!(e.contains("name = \"a/b\": use 1 to 64 letters"), "{e}");
    }

    #[test]
    fn the_scenario_s_priorities_map_by_rank_into_the_design_s_range_and_direction() {
        let river = Priority {
            first: PriorityFirst::Lowest,
            min: 1,
            max: 4,
        };
        let m = river.map(&[0, 10]).unwrap();
        assert_eq!(
            (m[&10], m[&0]),
            (1, 2),
            "the most urgent runs first: River's 1"
        );
        let highest = Priority {
            first: PriorityFirst::Highest,
            ..river
        };
        assert_eq!(highest.map(&[0]).unwrap()[&0], 4);
        let e = river.map(&[1, 2, 3, 4, 5]).unwrap_err();
        assert!(
            e.contains("allows 4 value(s) (1 to 4), but producers.priorities uses 5"),
            "{e}"
        );
    }

    #[test]
    fn names_that_are_not_plain_or_a_state_under_two_headings_are_refused() {
        let bad = |from: &str, to: &str| parse(&RIVER.replace(from, to)).unwrap_err();
        assert!(
            bad("river_job", "river_job; DROP")
                .contains("table = \"river_job; DROP\" is not a plain name")
        );
        assert!(
            bad("\"running\"]", "\"running\", \"completed\"]")
                .contains("states.done: the state 'completed' is also under states.in_flight")
        );
        assert!(bad("[\"completed\"]", "[]").contains("states.done: names no state"));
        assert!(
            bad(
                "column = \"state\"",
                "column = \"state\"\nview = \"v; DROP\""
            )
            .contains("states.view = \"v; DROP\" is not a plain name")
        );
        assert!(
            bad("counts = \"claims\"", "counts = \"tries\"").contains("unknown variant `tries`")
        );
        assert!(
            bad("payload = \"args\"", "payload = \"args\"\nwakeup = 1")
                .contains("unknown field `wakeup`")
        );
    }

    #[test]
    fn a_worker_section_is_checked_before_anything_starts() {
        let worker = |section: &str| {
            let d = parse(&format!("{RIVER}[worker]\n{section}\n"))?;
            d.external_workers(Path::new("/designs/lib"))
                .map_err(|e| format!("{}: {}", e.file, e.reason))
        };
        let w = worker("command = [\"python3\", \"worker.py\"]")
            .unwrap()
            .unwrap();
        assert_eq!((w.concurrency, w.connect_timeout.as_secs()), (1, 30));
        assert_eq!(w.dir, Path::new("/designs/lib"));
        let refused = |section: &str| worker(section).unwrap_err();
        for (section, expected) in [
            ("command = []", "[worker] command is empty"),
            (
                "command = [\"w\"]\nconcurrency = 0",
                "[worker] concurrency must be between 1 and 1000, got 0",
            ),
            (
                "command = [\"w\"]\nconcurrency = 1001",
                "[worker] concurrency must be between 1 and 1000, got 1001",
            ),
            (
                "command = [\"w\"]\nconnect_timeout = \"soon\"",
                "[worker] connect_timeout = \"soon\" is not a duration",
            ),
            ("command = [\"w\"]\nthreads = 2", "unknown field `threads`"),
        ] {
            let e = refused(section);
            assert!(e.contains(expected), "{section}: {e}");
        }
        assert!(
            refused("command = [\"w\"]\nconcurrency = 0").starts_with("/designs/lib/design.toml: ")
        );
        let without_states = parse("table = \"t\"\n[worker]\ncommand = [\"w\"]\n").unwrap_err();
        assert!(
            without_states.contains("[worker] needs [states]"),
            "{without_states}"
        );
    }
}
