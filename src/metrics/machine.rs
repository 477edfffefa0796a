//! The machine around the harness, from Linux `/proc`: who used its CPU in an interval —
//! the harness's own child processes (worker processes, a library's workers), the server the
//! run started (its process and every descendant), and everyone else, with the busiest of
//! them by name — and the share of time the hypervisor took (steal).
//!
//! A process's CPU is its own ticks plus those of the children it has waited for, so a
//! server's backends that exited between two readings still count (in their parent's).

use std::collections::HashMap;

/// Linux's USER_HZ, the unit of `/proc` CPU ticks on every architecture it exposes.
const TICKS_PER_S: f64 = 100.0;
/// How many of the other processes are named, busiest first.
pub const NAMED: usize = 3;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, PartialEq)]
struct Proc {
    ppid: u32,
    comm: String,
    /// Own user + system ticks, and those of its waited-for children (cutime + cstime).
    ticks: u64,
    /// When it started (ticks after boot): tells a reused pid from the process before.
    started: u64,
}

/// Every process of the machine at one moment.
#[derive(Debug, Clone, Default)]
pub struct ProcessTable {
    procs: HashMap<u32, Proc>,
}

impl ProcessTable {
    /// Reads `/proc`; `None` where there is none.
    pub fn read() -> Option<ProcessTable> {
        let mut procs = HashMap::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            // A process may end between the listing and the read: skip it.
            if let Some(p) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_stat(&s))
            {
                procs.insert(pid, p);
            }
        }
        Some(ProcessTable { procs })
    }

    /// `root` and its descendants, leaving out the trees rooted at `except`.
    fn tree(&self, root: u32, except: &[u32]) -> Vec<u32> {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (pid, p) in &self.procs {
            children.entry(p.ppid).or_default().push(*pid);
        }
        let mut out = Vec::new();
        let mut todo = vec![root];
        while let Some(pid) = todo.pop() {
            if except.contains(&pid) || !self.procs.contains_key(&pid) {
                continue;
            }
            out.push(pid);
            todo.extend(children.get(&pid).into_iter().flatten().copied());
        }
        out
    }

    /// Ticks the processes `pids` (of `self`) used since `before` was read, where
    /// `before_pids` were the same tree then. A process that exited since and was waited
    /// for hands all its ticks to its parent, those already counted too: they come off.
    fn tree_ticks_since(&self, pids: &[u32], before: &ProcessTable, before_pids: &[u32]) -> u64 {
        let gained: u64 = pids.iter().map(|p| self.ticks_since(*p, before)).sum();
        let gone: u64 = before_pids
            .iter()
            .filter(|p| {
                let then = before.procs.get(p);
                let now = self.procs.get(p);
                now.zip(then).is_none_or(|(n, t)| n.started != t.started)
            })
            .filter_map(|p| before.procs.get(p).map(|t| t.ticks))
            .sum();
        gained.saturating_sub(gone)
    }

    /// Ticks `pid` used since `before` was read (all of them for a process new since).
    fn ticks_since(&self, pid: u32, before: &ProcessTable) -> u64 {
        let Some(now) = self.procs.get(&pid) else {
            return 0;
        };
        match before.procs.get(&pid) {
            Some(then) if then.started == now.started => now.ticks.saturating_sub(then.ticks),
            _ => now.ticks,
        }
    }
}

/// `/proc/<pid>/stat`: the command name sits in parentheses and may hold spaces, so fields
/// are counted after its closing one.
fn parse_stat(stat: &str) -> Option<Proc> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let f: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14) …
    // starttime(19).
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(Proc {
        ppid: num(1)? as u32,
        comm,
        ticks: num(11)? + num(12)? + num(13)? + num(14)?,
        started: num(19)?,
    })
}

/// Who used the machine's CPU over one interval, seconds of CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuUse {
    /// The harness's child processes (its server excluded).
    pub children_s: f64,
    /// The server's processes, when the run started the server and can see them.
    pub server_s: Option<f64>,
    /// The busiest processes that are neither the harness's nor the server's, by name (the
    /// processes of one name together), with their CPU seconds: at most [`NAMED`], busiest
    /// first.
    pub busiest_others: Vec<(String, f64)>,
}

/// What two readings of the process table say about the interval between them.
pub fn cpu_use(before: &ProcessTable, now: &ProcessTable, me: u32, server: Option<u32>) -> CpuUse {
    let server_tree: Vec<u32> = server.map_or_else(Vec::new, |s| now.tree(s, &[]));
    let except: Vec<u32> = server.into_iter().collect();
    let mine = now.tree(me, &except);
    let children: Vec<u32> = mine.iter().copied().filter(|p| *p != me).collect();
    let server_then: Vec<u32> = server.map_or_else(Vec::new, |s| before.tree(s, &[]));
    let children_then: Vec<u32> = before
        .tree(me, &except)
        .into_iter()
        .filter(|p| *p != me)
        .collect();
    let seconds = |t: u64| t as f64 / TICKS_PER_S;
    let mut by_name: HashMap<&str, u64> = HashMap::new();
    for (pid, p) in &now.procs {
        if !mine.contains(pid) && !server_tree.contains(pid) {
            *by_name.entry(p.comm.as_str()).or_default() += now.ticks_since(*pid, before);
        }
    }
    let mut busiest: Vec<(&str, u64)> = by_name.into_iter().filter(|(_, t)| *t > 0).collect();
    busiest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let busiest_others = busiest
        .into_iter()
        .take(NAMED)
        .map(|(name, t)| (name.to_string(), t as f64 / TICKS_PER_S))
        .collect();
    CpuUse {
        children_s: seconds(now.tree_ticks_since(&children, before, &children_then)),
        server_s: (!server_tree.is_empty())
            .then(|| seconds(now.tree_ticks_since(&server_tree, before, &server_then))),
        busiest_others,
    }
}

/// The machine's CPU ticks from `/proc/stat`: busy (all but idle and iowait), stolen, all.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MachineTicks {
    pub busy: u64,
    pub steal: u64,
    pub total: u64,
}

impl MachineTicks {
    pub fn read() -> Option<MachineTicks> {
        parse_machine(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Busy CPU seconds, and the share of time stolen, since `before`.
    pub fn since(&self, before: &MachineTicks) -> Option<(f64, f64)> {
        let total = self.total.checked_sub(before.total)?;
        let busy = self.busy.checked_sub(before.busy)?;
        let steal = self.steal.checked_sub(before.steal)?;
        (total > 0).then(|| (busy as f64 / TICKS_PER_S, steal as f64 / total as f64))
    }

    /// The share of the machine's CPU time that was busy since `before`.
    pub fn busy_share(&self, before: &MachineTicks) -> Option<f64> {
        let total = self.total.checked_sub(before.total)?;
        let busy = self.busy.checked_sub(before.busy)?;
        (total > 0).then(|| busy as f64 / total as f64)
    }
}

pub(super) fn parse_machine(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some(MachineTicks {
        busy: total - idle,
        steal: v.get(7).copied().unwrap_or(0),
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[(u32, u32, &str, u64, u64)]) -> ProcessTable {
        ProcessTable {
            procs: rows
                .iter()
                .map(|&(pid, ppid, comm, ticks, started)| {
                    let comm = comm.to_string();
                    (
                        pid,
                        Proc {
                            ppid,
                            comm,
                            ticks,
                            started,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn stat_lines_parse_with_spaces_in_the_name() {
        let stat = "4242 (dbq bench (x)) S 17 2 3 4 5 6 7 8 9 10 250 50 30 20 20 0 8 0 777 0 0";
        let p = parse_stat(stat).unwrap();
        assert_eq!(p.ppid, 17);
        assert_eq!(p.comm, "dbq bench (x)");
        assert_eq!(p.ticks, 350);
        assert_eq!(p.started, 777);
        let m = parse_machine("cpu  100 0 50 800 50 0 0 25 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!((m.busy, m.steal, m.total), (175, 25, 1025));
    }

    #[test]
    fn the_interval_splits_into_children_server_and_others() {
        // 10: the harness; 11: its worker process; 12: the server it started, 13 a backend;
        // 20: someone else's busy loop; 21 and 22: two processes of another name.
        let before = table(&[
            (10, 1, "dbq-bench", 100, 5),
            (11, 10, "dbq-bench", 50, 6),
            (12, 10, "postgres", 10, 7),
            (13, 12, "postgres", 5, 8),
            (20, 1, "yes", 0, 9),
            (21, 1, "sh", 0, 9),
        ]);
        let now = table(&[
            (10, 1, "dbq-bench", 150, 5),
            (11, 10, "dbq-bench", 80, 6),
            // The backend 13 exited and was waited for: its ticks moved into the server's.
            (12, 10, "postgres", 10 + 5 + 40, 7),
            (14, 12, "postgres", 25, 30),
            (20, 1, "yes", 95, 9),
            (21, 1, "sh", 30, 9),
            (22, 1, "sh", 40, 31),
        ]);
        let u = cpu_use(&before, &now, 10, Some(12));
        assert_eq!(u.children_s, 0.30);
        // 12's 45 (40 of them 13's last), 14's 25; 13's 5 were counted before.
        assert_eq!(u.server_s, Some(0.65));
        assert_eq!(
            u.busiest_others,
            [("yes".to_string(), 0.95), ("sh".to_string(), 0.70)]
        );
        // Without a server of its own, the harness's tree takes in whatever it started.
        let u = cpu_use(&before, &now, 10, None);
        assert_eq!(u.server_s, None);
        assert!((u.children_s - 0.95).abs() < 1e-9, "{u:?}");
        // A reused pid counts from zero.
        let reused = table(&[(20, 1, "yes", 30, 99)]);
        assert_eq!(reused.ticks_since(20, &before), 30);
    }

    #[test]
    fn this_machine_can_be_read() {
        let t = ProcessTable::read().expect("a /proc");
        let me = std::process::id();
        assert!(t.tree(me, &[]).contains(&me));
        assert!(MachineTicks::read().is_some());
    }
}
