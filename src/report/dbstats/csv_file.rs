//! `db_stats.csv`, one row per sample: the columns every engine has, then the engine's own
//! where its samples have them; read back in this shape or the one before.

use super::{DbStatsRow, server_names};
use crate::backend::figures::TableReads;
use crate::backend::{DbSample, RowVersions};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The columns every engine's samples have.
const COLUMNS: [&str; 17] = [
    "t_s",
    "phase",
    "pending",
    "processing",
    "done",
    "dead_letter",
    "held",
    "table_bytes",
    "total_bytes",
    "xact_commit",
    "xact_rollback",
    "deadlocks",
    "wal_bytes",
    "oldest_xact_s",
    "waiting_sessions",
    "sample_ms",
    "checkpoints",
];

/// The row versions' columns, on an engine that keeps them (the SQL engines).
const VERSION_COLUMNS: [&str; 6] = [
    "dead_tuples",
    "vacuums",
    "autovacuums",
    "analyzes",
    "autoanalyzes",
    "xmin_age_xids",
];

/// The queue table's reads, on an engine that counts them per table (PostgreSQL).
const READ_COLUMNS: [&str; 4] = [
    "seq_scans",
    "seq_rows_read",
    "index_scans",
    "index_rows_fetched",
];

/// Which of the engine's own columns the samples have: a file holds an engine's figures
/// only, so a broker's has no vacuum columns and MariaDB's no reads.
struct Shape {
    versions: bool,
    notify: bool,
    reads: bool,
    indexes: Vec<String>,
    figures: Vec<String>,
}

impl Shape {
    fn of(rows: &[DbStatsRow]) -> Shape {
        let any = |f: &dyn Fn(&DbSample) -> bool| rows.iter().any(|r| f(&r.sample));
        Shape {
            versions: any(&|s| s.versions.is_some()),
            notify: any(&|s| s.notify_queue_usage.is_some()),
            reads: any(&|s| s.reads.is_some()),
            indexes: rows
                .iter()
                .flat_map(|r| r.sample.index_bytes.keys().cloned())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            figures: server_names(rows),
        }
    }

    fn header(&self) -> Vec<String> {
        let mut header: Vec<&str> = COLUMNS.to_vec();
        if self.versions {
            header.extend(VERSION_COLUMNS);
        }
        if self.notify {
            header.push("notify_queue_usage");
        }
        if self.reads {
            header.extend(READ_COLUMNS);
        }
        let mut header: Vec<String> = header.into_iter().map(String::from).collect();
        header.extend(self.indexes.iter().map(|i| format!("index_bytes:{i}")));
        header.extend(self.figures.iter().map(|f| format!("server:{f}")));
        header
    }

    fn record(&self, r: &DbStatsRow) -> Vec<String> {
        let s = &r.sample;
        let some = |v: Option<i64>| v.map_or(String::new(), |n| n.to_string());
        let mut rec = vec![
            format!("{:.3}", r.t_s),
            r.phase.clone(),
            s.pending.to_string(),
        ];
        rec.extend([s.processing, s.done, s.dead_letter].map(some));
        let work = [s.held, s.table_bytes, s.total_bytes, s.xact_commit];
        rec.extend(work.iter().map(|v| v.to_string()));
        rec.extend([s.xact_rollback, s.deadlocks, s.wal_bytes].map(|v| v.to_string()));
        rec.push(format!("{:.3}", s.oldest_xact_s));
        rec.push(s.wait_events.values().sum::<i64>().to_string());
        rec.push(format!("{:.3}", s.sample_ms));
        rec.push(s.checkpoints.to_string());
        if self.versions {
            let v = s.versions.map(|v| {
                let counts = [v.dead, v.vacuums, v.autovacuums, v.analyzes, v.autoanalyzes];
                (counts, v.horizon_age_xids)
            });
            rec.extend((0..5).map(|i| some(v.map(|(c, _)| c[i]))));
            rec.push(some(v.and_then(|(_, age)| age)));
        }
        if self.notify {
            rec.push(
                s.notify_queue_usage
                    .map_or(String::new(), |u| u.to_string()),
            );
        }
        if self.reads {
            let reads = s
                .reads
                .map(|r| [r.seq_scans, r.seq_rows, r.index_scans, r.index_rows]);
            rec.extend((0..4).map(|i| some(reads.map(|r| r[i]))));
        }
        rec.extend(
            self.indexes
                .iter()
                .map(|i| some(s.index_bytes.get(i).copied())),
        );
        rec.extend(self.figures.iter().map(|f| some(s.server.get(f).copied())));
        rec
    }
}

/// Writes `db_stats.csv`: the columns every engine has, then the engine's own where its
/// samples have them (row versions, the notify queue, the queue table's reads), one
/// `index_bytes:<name>` per index and one `server:<name>` per figure of a broker's own.
/// The read counters are the queue table's, by everyone but the sampler.
pub fn write_csv(rows: &[DbStatsRow], out: &mut dyn Write) -> Result<()> {
    let shape = Shape::of(rows);
    let mut w = csv::Writer::from_writer(out);
    w.write_record(shape.header())?;
    for r in rows {
        w.write_record(shape.record(r))?;
    }
    w.flush()?;
    Ok(())
}

/// The columns named `<prefix><name>` of one record, by name (empty cells left out).
fn prefixed(
    header: &csv::StringRecord,
    record: &csv::StringRecord,
    prefix: &str,
) -> BTreeMap<String, i64> {
    header
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            Some((
                h.strip_prefix(prefix)?.to_string(),
                record.get(i)?.parse().ok()?,
            ))
        })
        .collect()
}

/// Reads `db_stats.csv` back, in either shape: this version's (an engine's own columns only
/// where it has them, `held`) or the one before (every column on every engine,
/// `live_tuples`); wait events per sample are not in the file, only their total.
pub fn read_csv(input: impl Read) -> Result<Vec<DbStatsRow>> {
    let mut r = csv::Reader::from_reader(input);
    let header = r.headers()?.clone();
    let mut rows = Vec::new();
    for (n, record) in r.records().enumerate() {
        let c = Cells {
            header: &header,
            record: &record?,
            row: n + 1,
        };
        rows.push(DbStatsRow {
            t_s: c.float("t_s")?,
            phase: c.get("phase").to_string(),
            sample: c.sample()?,
        });
    }
    Ok(rows)
}

/// One record's cells by column name; a cell that does not parse is an error naming its
/// row and column.
struct Cells<'a> {
    header: &'a csv::StringRecord,
    record: &'a csv::StringRecord,
    row: usize,
}

impl Cells<'_> {
    /// The cell, or "" where the file has no such column.
    fn get(&self, name: &str) -> &str {
        let col = self.header.iter().position(|h| h == name);
        col.and_then(|i| self.record.get(i)).unwrap_or("")
    }

    fn parse<T: std::str::FromStr>(&self, name: &str) -> Result<T>
    where
        T::Err: std::error::Error + Send + Sync + 'static,
    {
        let row = self.row;
        (self.get(name).parse::<T>())
            .with_context(|| format!("db_stats.csv row {row}: column {name}"))
    }

    fn int(&self, name: &str) -> Result<i64> {
        self.parse(name)
    }

    fn float(&self, name: &str) -> Result<f64> {
        self.parse(name)
    }

    /// An empty cell or a missing column is `None`.
    fn optional_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            "" => Ok(None),
            _ => self.int(name).map(Some),
        }
    }

    fn sample(&self) -> Result<DbSample> {
        let held = match self.optional_int("held")? {
            Some(held) => held,
            // Files before schema 2 name it live_tuples.
            None => self.int("live_tuples")?,
        };
        Ok(DbSample {
            pending: self.int("pending")?,
            processing: self.optional_int("processing")?,
            done: self.optional_int("done")?,
            dead_letter: self.optional_int("dead_letter")?,
            sample_ms: self.get("sample_ms").parse().unwrap_or(0.0),
            held,
            versions: self.versions()?,
            table_bytes: self.int("table_bytes")?,
            total_bytes: self.int("total_bytes")?,
            index_bytes: prefixed(self.header, self.record, "index_bytes:"),
            server: prefixed(self.header, self.record, "server:"),
            xact_commit: self.int("xact_commit")?,
            xact_rollback: self.int("xact_rollback")?,
            deadlocks: self.int("deadlocks")?,
            wal_bytes: self.int("wal_bytes")?,
            oldest_xact_s: self.float("oldest_xact_s")?,
            notify_queue_usage: match self.get("notify_queue_usage") {
                "" => None,
                _ => Some(self.float("notify_queue_usage")?),
            },
            // Files of older versions have no checkpoints.
            checkpoints: self.optional_int("checkpoints")?.unwrap_or(0),
            // Only the total is in the file (waiting_sessions); the breakdown is in summary.json.
            wait_events: BTreeMap::new(),
            reads: self.reads()?,
            own_reads: None,
            own_unreported: None,
        })
    }

    /// The row versions, where the file has their columns and the row fills them.
    fn versions(&self) -> Result<Option<RowVersions>> {
        let Some(dead) = self.optional_int("dead_tuples")? else {
            return Ok(None);
        };
        Ok(Some(RowVersions {
            dead,
            vacuums: self.int("vacuums")?,
            autovacuums: self.int("autovacuums")?,
            analyzes: self.int("analyzes")?,
            autoanalyzes: self.int("autoanalyzes")?,
            horizon_age_xids: self.optional_int("xmin_age_xids")?,
        }))
    }

    /// The queue table's reads, where the engine counts them.
    fn reads(&self) -> Result<Option<TableReads>> {
        let Some(seq_scans) = self.optional_int("seq_scans")? else {
            return Ok(None);
        };
        Ok(Some(TableReads {
            seq_scans,
            seq_rows: self.int("seq_rows_read")?,
            index_scans: self.int("index_scans")?,
            index_rows: self.int("index_rows_fetched")?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_s: f64, autovacuums: i64, dead: i64) -> DbStatsRow {
        DbStatsRow {
            t_s,
            phase: "load".into(),
            sample: DbSample {
                versions: Some(RowVersions {
                    autovacuums,
                    dead,
                    ..RowVersions::default()
                }),
                ..DbSample::default()
            },
        }
    }

    fn broker_row(t_s: f64, acked_total: i64) -> DbStatsRow {
        let mut r = row(t_s, 0, 0);
        r.sample.versions = None;
        r.sample.server = BTreeMap::from([("acked_total".to_string(), acked_total)]);
        r
    }

    /// A broker's file has no row versions' columns and reads back without them; a SQL
    /// engine's has them; a file of the previous shape (every column, `live_tuples`) still
    /// reads.
    #[test]
    fn each_engine_writes_its_own_columns_and_both_shapes_read_back() {
        let broker = vec![broker_row(0.0, 5)];
        let mut csv = Vec::new();
        write_csv(&broker, &mut csv).unwrap();
        let header = String::from_utf8(csv.clone()).unwrap();
        let header = header.lines().next().unwrap().to_string();
        assert!(
            !header.contains("dead_tuples") && !header.contains("seq_scans"),
            "{header}"
        );
        assert!(!header.contains("notify_queue_usage"), "{header}");
        assert_eq!(read_csv(csv.as_slice()).unwrap()[0].sample.versions, None);

        let sql = vec![row(0.0, 2, 40)];
        let mut csv = Vec::new();
        write_csv(&sql, &mut csv).unwrap();
        let back = read_csv(csv.as_slice()).unwrap();
        assert_eq!(back[0].sample.versions, sql[0].sample.versions);

        let old = "t_s,phase,pending,processing,done,dead_letter,live_tuples,dead_tuples,table_bytes,total_bytes,vacuums,autovacuums,analyzes,autoanalyzes,xact_commit,xact_rollback,deadlocks,wal_bytes,xmin_age_xids,oldest_xact_s,notify_queue_usage,waiting_sessions,sample_ms,checkpoints,seq_scans,seq_rows_read,index_scans,index_rows_fetched\n\
                   1.000,load,4,,,,400,194,221184,303104,0,3,1,0,139,0,0,22706440,7,0.000,0,0,5.854,0,2,0,305,516\n";
        let old = read_csv(old.as_bytes()).unwrap();
        let s = &old[0].sample;
        assert_eq!((s.held, s.notify_queue_usage), (400, Some(0.0)));
        let v = s.versions.unwrap();
        assert_eq!(
            (v.dead, v.autovacuums, v.horizon_age_xids),
            (194, 3, Some(7))
        );
    }
}
