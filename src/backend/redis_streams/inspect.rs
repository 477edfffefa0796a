//! What the run's own connections read from a Redis queue (the sampler, the proof) and what
//! fault drivers do to the server. The proof's view of a job comes from the broker's own
//! structures first: a job with an entry still in the stream is waiting (or, in the group's
//! pending list, being worked), a job in the dead-letter stream is dead-lettered; only a
//! job in neither is read from the state hash (`done`), and a job in none is `missing`.
//! An entry the group has already delivered that is neither pending nor backing off was
//! acknowledged by someone other than the run's workers (their scripts delete what they
//! acknowledge, or park it in the delayed set): no one will be handed it again, so its job
//! is [`STRANDED`], which the proof counts as lost.

use super::GROUP;
use super::link::RedisLink;
use crate::backend::broker::mismatches;
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::figures::{DbSample, TableStats};
use crate::backend::job::{JobId, JobStatus, TableMismatch};
use crate::backend::seam::{Audit, Inspect, Sessions};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Entries read per round trip when the proof walks a stream.
const PAGE: usize = 10_000;

/// The proof's word for a job whose entry was acknowledged outside the run.
pub const STRANDED: &str = "acknowledged outside the run, never delivered again";

/// A stream entry id (`1700000000000-3`) as numbers, ordered as the stream orders them.
fn entry_order(entry: &str) -> Option<(u64, u64)> {
    let (ms, seq) = entry.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Where the broker holds a job's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Waiting, backing off, being worked or dead-lettered.
    As(JobStatus),
    /// Delivered, then acknowledged by someone other than the run's workers.
    Stranded,
}

impl Held {
    fn as_str(self) -> &'static str {
        match self {
            Held::As(s) => s.as_str(),
            Held::Stranded => STRANDED,
        }
    }
}

/// `field:value` from an `INFO` reply.
pub fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == field).then(|| v.trim().to_string())
    })
}

/// A state hash value (`done:2`): the status and the attempts.
fn parse_state(s: &str) -> Option<(JobStatus, i32)> {
    let (status, retries) = s.rsplit_once(':')?;
    Some((JobStatus::parse(status)?, retries.parse().ok()?))
}

impl RedisLink {
    /// Every entry of `stream`: (entry id, job id).
    async fn walk(&mut self, stream: &str) -> Result<Vec<(String, JobId)>, BackendError> {
        let mut out = Vec::new();
        let mut from = "-".to_string();
        loop {
            let r = redis::cmd("XRANGE")
                .arg(stream)
                .arg(&from)
                .arg("+")
                .arg("COUNT")
                .arg(PAGE)
                .query_async::<Vec<(String, HashMap<String, String>)>>(&mut self.conn)
                .await;
            let page = self.seen(r)?;
            let full = page.len() == PAGE;
            for (entry, fields) in page {
                let id = fields.get("id").and_then(|v| v.parse().ok()).unwrap_or(0);
                from = format!("({entry}");
                out.push((entry, id));
            }
            if !full {
                return Ok(out);
            }
        }
    }

    /// The entries in the group's pending list (being worked).
    async fn pending_entries(&mut self) -> Result<HashSet<String>, BackendError> {
        let mut out = HashSet::new();
        let mut from = "-".to_string();
        loop {
            let r = redis::cmd("XPENDING")
                .arg(&self.shared.keys.stream)
                .arg(GROUP)
                .arg(&from)
                .arg("+")
                .arg(PAGE)
                .query_async::<Vec<(String, String, u64, u64)>>(&mut self.conn)
                .await;
            let page = match r {
                Err(e) if e.code() == Some("NOGROUP") => return Ok(out),
                r => self.seen(r)?,
            };
            let full = page.len() == PAGE;
            for (entry, ..) in page {
                from = format!("({entry}");
                out.insert(entry);
            }
            if !full {
                return Ok(out);
            }
        }
    }

    /// The group's last delivered entry, none before the group exists.
    async fn last_delivered(&mut self) -> Result<Option<(u64, u64)>, BackendError> {
        let r = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.shared.keys.stream)
            .query_async::<Vec<HashMap<String, redis::Value>>>(&mut self.conn)
            .await;
        let groups = match r {
            Err(e) if e.code() == Some("ERR") => return Ok(None),
            r => self.seen(r)?,
        };
        Ok(groups
            .iter()
            .find(|g| matches!(g.get("name"), Some(v) if redis::from_redis_value::<String>(v.clone()).is_ok_and(|n| n == GROUP)))
            .and_then(|g| redis::from_redis_value::<String>(g.get("last-delivered-id")?.clone()).ok())
            .and_then(|id| entry_order(&id)))
    }

    /// What the broker itself holds of each job: the stream (waiting, backing off, being
    /// worked, or stranded) and the dead-letter stream.
    async fn broker_view(&mut self) -> Result<HashMap<JobId, Held>, BackendError> {
        let working = self.pending_entries().await?;
        let delayed = self.delayed_entries().await?;
        let delivered = self.last_delivered().await?;
        let stream = self.shared.keys.stream.clone();
        let dead = self.shared.keys.dead.clone();
        let mut view = HashMap::new();
        for (entry, id) in self.walk(&stream).await? {
            let handed_out = delivered.is_some_and(|d| entry_order(&entry).is_some_and(|e| e <= d));
            let s = if working.contains(&entry) {
                Held::As(JobStatus::Processing)
            } else if handed_out && !delayed.contains(&entry) {
                Held::Stranded
            } else {
                Held::As(JobStatus::Pending)
            };
            // A job with a newer entry waiting is waiting, whatever an older entry says.
            let slot = view.entry(id).or_insert(s);
            if s == Held::As(JobStatus::Pending) {
                *slot = s;
            }
        }
        for (_, id) in self.walk(&dead).await? {
            view.entry(id).or_insert(Held::As(JobStatus::DeadLetter));
        }
        Ok(view)
    }

    /// The entries backing off (the delayed set's members).
    async fn delayed_entries(&mut self) -> Result<HashSet<String>, BackendError> {
        let r = redis::cmd("ZRANGE")
            .arg(&self.shared.keys.delayed)
            .arg(0)
            .arg(-1)
            .query_async::<Vec<String>>(&mut self.conn)
            .await;
        Ok(self.seen(r)?.into_iter().collect())
    }

    /// The state hash's word on `ids`, `None` where it has none.
    async fn states(&mut self, ids: &[JobId]) -> Result<Vec<Option<String>>, BackendError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(PAGE) {
            let r = redis::cmd("HMGET")
                .arg(&self.shared.keys.state)
                .arg(chunk)
                .query_async::<Vec<Option<String>>>(&mut self.conn)
                .await;
            out.extend(self.seen(r)?);
        }
        Ok(out)
    }

    /// One hash, whole, in pages.
    async fn scan_hash(&mut self, key: &str) -> Result<Vec<(String, String)>, BackendError> {
        let mut out = Vec::new();
        let mut cursor = 0u64;
        loop {
            let r = redis::cmd("HSCAN")
                .arg(key)
                .arg(cursor)
                .arg("COUNT")
                .arg(PAGE)
                .query_async::<(u64, Vec<(String, String)>)>(&mut self.conn)
                .await;
            let (next, page) = self.seen(r)?;
            out.extend(page);
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// The counts script: (stream entries, being worked, backing off, dead, ever enqueued).
    async fn counts(&mut self) -> Result<[i64; 5], BackendError> {
        let k = &self.shared.keys;
        let r = self
            .shared
            .scripts
            .counts
            .key(&k.stream)
            .key(&k.delayed)
            .key(&k.dead)
            .key(&k.state)
            .arg(GROUP)
            .invoke_async::<Vec<i64>>(&mut self.conn)
            .await;
        let v = self.seen(r)?;
        v.try_into()
            .map_err(|_| BackendError::new(ErrorClass::Permanent, "the counts script's reply"))
    }

    async fn info(&mut self) -> Result<String, BackendError> {
        let r = redis::cmd("INFO")
            .arg("all")
            .query_async::<String>(&mut self.conn)
            .await;
        self.seen(r)
    }
}

#[async_trait]
impl Inspect for RedisLink {
    /// Where the jobs are (`pending` counts entries waiting and backing off), the stream's
    /// entries as live tuples, the server's memory as the total size and the append-only
    /// file as the log written.
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let started = Instant::now();
        let [entries, working, delayed, dead, ever] = self.counts().await?;
        let info = self.info().await?;
        let figure = |f: &str| {
            info_field(&info, f)
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
        };
        let server = [
            ("stream_entries", entries),
            ("pending_entries", working),
            ("delayed", delayed),
            ("dead_letters", dead),
            ("used_memory_bytes", figure("used_memory")),
            ("aof_bytes", figure("aof_current_size")),
            ("commands_total", figure("total_commands_processed")),
        ];
        Ok(DbSample {
            pending: entries - working,
            processing: full.then_some(working),
            done: full.then_some(ever - entries - dead),
            dead_letter: full.then_some(dead),
            sample_ms: started.elapsed().as_secs_f64() * 1000.0,
            held: entries,
            total_bytes: figure("used_memory"),
            wal_bytes: figure("aof_current_size"),
            xact_commit: figure("total_commands_processed"),
            server: server.map(|(k, v)| (k.to_string(), v)).into(),
            ..DbSample::default()
        })
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let [entries, ..] = self.counts().await?;
        let info = self.info().await?;
        Ok(TableStats {
            live_tuples: entries,
            dead_tuples: 0,
            table_bytes: 0,
            total_bytes: info_field(&info, "used_memory")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        })
    }

    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError> {
        let [entries, working, _, dead, ever] = self.counts().await?;
        Ok(vec![
            ("pending".into(), entries - working),
            ("processing".into(), working),
            ("done".into(), ever - entries - dead),
            ("dead_letter".into(), dead),
        ])
    }

    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        let states = self.states(ids).await?;
        Ok(ids
            .iter()
            .zip(states)
            .filter_map(|(id, s)| {
                let (status, retries) = parse_state(s.as_deref()?)?;
                Some((*id, status, Some(retries)))
            })
            .collect())
    }

    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        let mut out = Vec::new();
        for chunk in keys.chunks(PAGE) {
            let r = redis::cmd("HMGET")
                .arg(&self.shared.keys.keys)
                .arg(chunk)
                .query_async::<Vec<Option<JobId>>>(&mut self.conn)
                .await;
            let ids = self.seen(r)?;
            out.extend(
                chunk
                    .iter()
                    .zip(ids)
                    .filter_map(|(k, id)| Some((id?, k.clone()))),
            );
        }
        Ok(out)
    }

    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError> {
        let broker = self.broker_view().await?;
        let states: HashMap<JobId, Option<String>> =
            ids.iter().copied().zip(self.states(ids).await?).collect();
        Ok(mismatches(ids, expected, |id, _| match broker.get(&id) {
            Some(held) => held.as_str().to_string(),
            None => match states[&id].as_deref().and_then(parse_state) {
                // Not in the stream nor among the dead: the state hash says how it ended.
                Some((JobStatus::Done, _)) => "done".to_string(),
                Some((s, _)) => format!("{s} (no entry left)"),
                None => "missing".to_string(),
            },
        }))
    }

    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let known: HashSet<JobId> = known.iter().copied().collect();
        let state = self.shared.keys.state.clone();
        let mut out: Vec<(JobId, String)> = self
            .scan_hash(&state)
            .await?
            .into_iter()
            .filter_map(|(id, s)| {
                let id: JobId = id.parse().ok()?;
                let status = s.rsplit_once(':').map_or(s.as_str(), |(st, _)| st);
                ((from..to).contains(&id) && !known.contains(&id)).then(|| (id, status.into()))
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

#[async_trait]
impl Audit for RedisLink {
    async fn audited_completions(
        &mut self,
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, i64)>, BackendError> {
        let audit = self.shared.keys.audit.clone();
        let mut out: Vec<(JobId, i64)> = self
            .scan_hash(&audit)
            .await?
            .into_iter()
            .filter_map(|(id, n)| Some((id.parse().ok()?, n.parse().ok()?)))
            .filter(|(id, n)| (from..to).contains(id) && *n > 0)
            .collect();
        out.sort();
        Ok(out)
    }
}

#[async_trait]
impl Sessions for RedisLink {
    /// `CLIENT KILL ID` on clients named `dbq-bench/<ns>/<role>…`, chosen at random.
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError> {
        let r = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async::<String>(&mut self.conn)
            .await;
        let list = self.seen(r)?;
        let prefix = format!("dbq-bench/{}/", self.shared.namespace);
        let mut ids: Vec<String> = list
            .lines()
            .filter_map(|l| {
                let field = |f: &str| {
                    l.split(' ')
                        .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))
                };
                let role = field("name")?.strip_prefix(&prefix)?;
                roles
                    .iter()
                    .any(|r| role.starts_with(r))
                    .then(|| field("id").map(str::to_string))?
            })
            .collect();
        rand::seq::SliceRandom::shuffle(ids.as_mut_slice(), &mut rand::rng());
        let mut killed = 0;
        for id in ids.iter().take(count as usize) {
            let r = redis::cmd("CLIENT")
                .arg("KILL")
                .arg("ID")
                .arg(id)
                .query_async::<i64>(&mut self.conn)
                .await;
            killed += self.seen(r)? as u64;
        }
        Ok(("CLIENT KILL", killed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_info_fields_read_back() {
        assert_eq!(parse_state("done:2"), Some((JobStatus::Done, 2)));
        assert_eq!(
            parse_state("dead_letter:5"),
            Some((JobStatus::DeadLetter, 5))
        );
        assert_eq!(parse_state("odd"), None);
        let info = "# Server\r\nredis_version:7.0.15\r\nused_memory:1024\r\n";
        assert_eq!(info_field(info, "used_memory").as_deref(), Some("1024"));
        assert_eq!(info_field(info, "nope"), None);
        assert!(entry_order("1700000000000-10") > entry_order("1700000000000-9"));
        assert!(entry_order("1700000000001-0") > entry_order("1700000000000-99"));
        assert_eq!(entry_order("0-0"), Some((0, 0)));
        assert_eq!(entry_order("garbage"), None);
    }
}
