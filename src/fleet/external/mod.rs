//! A queue library's own worker processes as the consumer fleet (a design's `[worker]`).
//! Each consumer slot runs the design's command, with the run's server in libpq's variables
//! and a Unix socket of its own in `DBQ_BENCH_SOCKET`; the library claims, runs and finishes
//! jobs itself, and the few lines of glue around its handler speak the [`wire`] protocol:
//! the harness answers each `start` with what the scenario's handler does, and turns the
//! worker's reports into the same events its own workers send. Rules: a worker that does not
//! say hello in time, speaks another protocol or sends garbage stops the run with one line
//! naming its command (nothing is restarted, nothing left running); a worker that dies after
//! its hello is a crash, its jobs in doubt, and it is started again after `restart_after`.
//! A job the handler reported shortly before its worker died is in doubt too: the library may
//! not have recorded the outcome yet.

pub mod wire;

use super::handler::SimulatedHandler;
use super::registry::WorkerRegistry;
use super::{FleetContext, sleep_or_stop};
use crate::backend::ExternalWorkers;
use crate::metrics::{Event, JobId};
use crate::scenario::HandlerPlan;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use wire::{FromWorker, Then, ToWorker};

/// How long before its worker died a reported outcome is still in doubt (the library
/// records it after the handler returns, possibly in a batch).
const REPORT_DOUBT: Duration = Duration::from_secs(5);

/// How long a stopping worker may take to finish its jobs before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Lines of a worker's own output kept for an error message.
const TAIL_LINES: usize = 20;

/// What the library's worker processes need from the run.
#[derive(Debug, Clone)]
pub struct ExternalFleet {
    pub workers: ExternalWorkers,
    /// The run's server and schema (libpq's variables), and the run's settings for the glue.
    pub env: Vec<(String, String)>,
    pub handler: HandlerPlan,
    pub seed: u64,
    pub restart_after: Duration,
}

/// One supervisor task per slot of `registry`, each running one worker process at a time.
pub fn spawn(
    fleet: &ExternalFleet,
    ctx: &FleetContext,
    registry: &Arc<WorkerRegistry>,
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for slot in 0..registry.len() as u32 {
        let slot = Slot {
            fleet: fleet.clone(),
            slot,
            ctx: ctx.clone(),
            registry: registry.clone(),
            rng: StdRng::seed_from_u64(super::consumer::worker_seed(fleet.seed, slot)),
        };
        set.spawn(slot.supervise(stop.clone()));
    }
    set
}

/// One life's worker process: the child, its output, and the socket it connects to (removed
/// when the life ends).
struct Process {
    child: tokio::process::Child,
    pid: i32,
    tail: Tail,
    listener: UnixListener,
    _socket: RemoveOnDrop,
    /// Its entry among what the process started, for a second Ctrl-C (see `leftovers`).
    _remembered: Option<crate::leftovers::Remembered>,
}

/// A life's end takes its whole process group with it: a library's helper processes
/// (Python's multiprocessing resource tracker and spawned children) outlive a SIGKILLed
/// worker otherwise, and the run would leave them running.
impl Drop for Process {
    fn drop(&mut self) {
        if self.pid > 0 {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
        }
    }
}

/// What a worker's hello names: its library, and the settings it reported.
type Said = (Option<String>, BTreeMap<String, serde_json::Value>);

/// The worker's lines, each read or the error that ends them.
type Lines = mpsc::Receiver<Result<FromWorker, String>>;

/// How one life of a worker process ended.
enum Ended {
    /// Asked to stop, it exited holding nothing.
    Stopped,
    /// It died, or exited on its own, after its hello.
    Died {
        cause: String,
        jobs: Vec<JobId>,
        reported: Vec<JobId>,
    },
    /// It never became a worker the harness can use: the run stops.
    Refused(String),
}

struct Slot {
    fleet: ExternalFleet,
    slot: u32,
    ctx: FleetContext,
    registry: Arc<WorkerRegistry>,
    rng: StdRng,
}

impl Slot {
    async fn supervise(mut self, stop: CancellationToken) {
        let mut life = 0u32;
        while !stop.is_cancelled() {
            life += 1;
            let ended = self.life(life, &stop).await;
            self.registry.set_pid(self.slot, 0);
            self.registry.set_in_flight(self.slot, None);
            match ended {
                Ended::Stopped => break,
                Ended::Refused(error) => {
                    self.ctx.emit(Event::Fatal {
                        at_us: self.ctx.clock.now_us(),
                        role: format!("worker {} (slot {})", self.fleet.workers.shown(), self.slot),
                        error,
                    });
                    break;
                }
                Ended::Died {
                    cause,
                    jobs,
                    reported,
                } => self.ctx.emit(Event::WorkerCrashed {
                    at_us: self.ctx.clock.now_us(),
                    slot: self.slot,
                    jobs,
                    reported,
                    cause,
                }),
            }
            sleep_or_stop(self.fleet.restart_after, &stop).await;
        }
    }

    /// Starts the command, waits for its hello, then serves it until it ends.
    async fn life(&mut self, life: u32, stop: &CancellationToken) -> Ended {
        let mut process = match self.start(life) {
            Ok(p) => p,
            Err(e) => return Ended::Refused(e),
        };
        let (lines, write) = match self.greet(&mut process, stop).await {
            Ok(connection) => connection,
            Err(ended) => return ended,
        };
        self.registry.set_pid(self.slot, process.pid);
        match self.serve_until_end(process.pid, lines, write, stop).await {
            Ok((serving, stopping)) => self.ending(process, serving, stopping).await,
            Err(e) => Ended::Refused(e),
        }
    }

    /// Opens this life's socket and starts the command, its output followed.
    fn start(&self, life: u32) -> Result<Process, String> {
        // Unique in this process (which may run several fleets at once) and on the machine.
        static LIVES: AtomicU64 = AtomicU64::new(0);
        let socket = std::env::temp_dir().join(format!(
            "dbq-bench-{}-{}-{life}-{}.sock",
            std::process::id(),
            self.slot,
            LIVES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .map_err(|e| format!("cannot open its socket {}: {e}", socket.display()))?;
        let socket = RemoveOnDrop(socket);
        let w = &self.fleet.workers;
        let mut child = tokio::process::Command::new(&w.command[0])
            .args(&w.command[1..])
            .current_dir(&w.dir)
            .envs(self.fleet.env.iter().cloned())
            .env("DBQ_BENCH_SOCKET", &socket.0)
            .env("DBQ_BENCH_SLOT", self.slot.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot be started in {}: {e}", w.dir.display()))?;
        let mut tail = Tail::default();
        tail.follow(child.stdout.take());
        tail.follow(child.stderr.take());
        let pid = child.id().unwrap_or(0) as i32;
        let remembered = (pid > 0).then(|| {
            let what = format!("library worker {} (slot {})", w.command[0], self.slot);
            let group = crate::leftovers::Started::Group { pgid: pid, what };
            crate::leftovers::Remembered(crate::leftovers::remember(group))
        });
        Ok(Process {
            pid,
            child,
            tail,
            listener,
            _socket: socket,
            _remembered: remembered,
        })
    }

    /// Waits for the worker to connect and say hello in protocol 1, and welcomes it.
    async fn greet(
        &self,
        p: &mut Process,
        stop: &CancellationToken,
    ) -> Result<(Lines, OwnedWriteHalf), Ended> {
        let timeout = self.fleet.workers.connect_timeout;
        let connected = tokio::select! {
            accepted = p.listener.accept() => accepted.map_err(|e| format!("its socket failed: {e}")),
            status = p.child.wait() => {
                p.tail.read_to_end().await;
                Err(format!(
                    "exited ({}) before it connected to $DBQ_BENCH_SOCKET{}",
                    super::exit_cause(status),
                    p.tail.last()
                ))
            }
            _ = tokio::time::sleep(timeout) => Err(format!(
                "did not connect to $DBQ_BENCH_SOCKET within {} (its [worker] connect_timeout): its glue must connect and send {{\"hello\": {{\"protocol\": {}}}}} first (docs/libraries.md){}",
                humantime::format_duration(timeout),
                wire::PROTOCOL,
                p.tail.last()
            )),
            _ = stop.cancelled() => return Err(Ended::Stopped),
        };
        let (read, mut write) = connected.map_err(Ended::Refused)?.0.into_split();
        let mut lines = read_lines(read);
        let (library, settings) = self.hello(p, &mut lines).await.map_err(Ended::Refused)?;
        self.ctx.emit(Event::WorkerHello {
            at_us: self.ctx.clock.now_us(),
            slot: self.slot,
            library,
            settings: settings
                .into_iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => (k, s),
                    other => (k, other.to_string()),
                })
                .collect(),
        });
        let welcome = wire::write(&ToWorker::Welcome {
            protocol: wire::PROTOCOL,
        });
        match write.write_all(welcome.as_bytes()).await {
            Ok(()) => Ok((lines, write)),
            Err(e) => Err(Ended::Refused(format!(
                "closed its socket at the welcome: {e}"
            ))),
        }
    }

    /// The library and settings the worker's first line names, or what is wrong with it.
    async fn hello(&self, p: &mut Process, lines: &mut Lines) -> Result<Said, String> {
        let timeout = self.fleet.workers.connect_timeout;
        Err(match tokio::time::timeout(timeout, lines.recv()).await {
            Ok(Some(Ok(FromWorker::Hello {
                protocol,
                library,
                settings,
            }))) if protocol == wire::PROTOCOL => return Ok((library, settings)),
            Ok(Some(Ok(FromWorker::Hello { protocol, .. }))) => format!(
                "speaks protocol {protocol}; this harness speaks {}",
                wire::PROTOCOL
            ),
            Ok(Some(Ok(other))) => format!(
                "sent {other:?} before its hello; the first line must be {{\"hello\": {{\"protocol\": {}}}}}",
                wire::PROTOCOL
            ),
            Ok(Some(Err(e))) => e,
            Ok(None) => {
                let _ = tokio::time::timeout(timeout, p.child.wait()).await;
                p.tail.read_to_end().await;
                format!("closed its socket before its hello{}", p.tail.last())
            }
            Err(_) => format!(
                "connected but sent no hello within {}",
                humantime::format_duration(timeout)
            ),
        })
    }

    /// Answers the worker's lines until its socket closes; on `stop`, asks it to stop
    /// (SIGTERM) and kills it after [`STOP_GRACE`]. Returns what it was doing and whether
    /// it was asked to stop, or why it stops the run.
    async fn serve_until_end(
        &mut self,
        pid: i32,
        mut lines: Lines,
        mut write: OwnedWriteHalf,
        stop: &CancellationToken,
    ) -> Result<(Serving, bool), String> {
        let mut serving = Serving::default();
        let mut stopping = false;
        let grace = tokio::time::sleep(Duration::MAX);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                line = lines.recv() => match line {
                    Some(Ok(message)) => {
                        if let Some(reply) = self.serve(message, &mut serving)? {
                            // A worker that no longer reads is about to die: its end says so.
                            let _ = write.write_all(wire::write(&reply).as_bytes()).await;
                        }
                    }
                    Some(Err(e)) => return Err(e),
                    None => return Ok((serving, stopping)),
                },
                _ = stop.cancelled(), if !stopping => {
                    stopping = true;
                    let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
                    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                    grace.as_mut().reset(tokio::time::Instant::now() + STOP_GRACE);
                }
                _ = &mut grace => {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                    grace.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(3600));
                }
            }
        }
    }

    /// How the life ended once its socket closed: stopped as asked, or died holding jobs.
    async fn ending(&self, mut p: Process, mut serving: Serving, stopping: bool) -> Ended {
        let status = p.child.wait().await;
        p.tail.read_to_end().await;
        let jobs: Vec<JobId> = serving.started.keys().copied().collect();
        if stopping && jobs.is_empty() {
            return Ended::Stopped;
        }
        let now = self.ctx.clock.now_us();
        Ended::Died {
            cause: format!("{}{}", super::exit_cause(status), p.tail.last()),
            jobs,
            reported: serving.reported_since(now.saturating_sub(REPORT_DOUBT.as_micros() as u64)),
        }
    }

    /// One message of a worker that said hello: its event, and the reply it gets.
    fn serve(
        &mut self,
        message: FromWorker,
        serving: &mut Serving,
    ) -> Result<Option<ToWorker>, String> {
        let now = self.ctx.clock.now_us();
        match message {
            FromWorker::Hello { .. } => Err("sent a second hello".into()),
            FromWorker::Start {
                job,
                payload,
                attempt,
            } => {
                let payload = payload.unwrap_or_default();
                self.ctx.emit(Event::Claimed {
                    job,
                    intended_us: payload.t,
                    started_us: None,
                    claimed_us: now,
                    first: true,
                    attempt,
                });
                serving.start(job, now, payload.t);
                self.registry.set_held(self.slot, serving.held());
                let run = SimulatedHandler::new(self.fleet.handler).draw(&mut self.rng);
                let then = match (payload.crash, payload.poison || run.fails) {
                    (true, _) => Then::Crash,
                    (false, true) => Then::Fail,
                    (false, false) => Then::Done,
                };
                Ok(Some(ToWorker::Run {
                    job,
                    sleep_s: run.duration.as_secs_f64(),
                    then,
                }))
            }
            FromWorker::Done { job } | FromWorker::Fail { job, .. } => {
                let (started_us, intended_us) = serving.finish(job).ok_or_else(|| {
                    format!("reported job {job} finished, but never sent its start")
                })?;
                self.registry.set_held(self.slot, serving.held());
                serving.reported.push_back((now, job));
                let handler_us = now.saturating_sub(started_us);
                self.ctx.emit(match message {
                    FromWorker::Fail { retrying, .. } => Event::Failed {
                        job,
                        intended_us,
                        handler_us,
                        committed_us: now,
                        dead_lettered: !retrying,
                        busy_us: handler_us,
                    },
                    _ => Event::Completed {
                        job,
                        intended_us,
                        handler_us,
                        committed_us: now,
                        busy_us: handler_us,
                    },
                });
                serving.forget_before(now.saturating_sub(REPORT_DOUBT.as_micros() as u64));
                Ok(None)
            }
        }
    }
}

/// What one life of a worker is doing: the runs it started and has not reported (µs
/// started, intended; a job started twice at once has two), and the jobs it reported lately
/// (µs reported).
#[derive(Default)]
struct Serving {
    started: BTreeMap<JobId, VecDeque<(u64, Option<u64>)>>,
    reported: VecDeque<(u64, JobId)>,
}

impl Serving {
    fn start(&mut self, job: JobId, now: u64, intended: Option<u64>) {
        self.started
            .entry(job)
            .or_default()
            .push_back((now, intended));
    }

    /// The job's oldest unreported run, which its report ends.
    fn finish(&mut self, job: JobId) -> Option<(u64, Option<u64>)> {
        let runs = self.started.get_mut(&job)?;
        let run = runs.pop_front();
        if runs.is_empty() {
            self.started.remove(&job);
        }
        run
    }

    fn held(&self) -> Vec<JobId> {
        self.started.keys().copied().collect()
    }

    fn forget_before(&mut self, us: u64) {
        while self.reported.front().is_some_and(|(at, _)| *at < us) {
            self.reported.pop_front();
        }
    }

    fn reported_since(&mut self, us: u64) -> Vec<JobId> {
        self.forget_before(us);
        self.reported.iter().map(|(_, job)| *job).collect()
    }
}

/// Reads the worker's lines on a task of their own (so that no partial line is lost to a
/// `select!`): each one read, or the error that ends them.
fn read_lines(read: impl AsyncRead + Unpin + Send + 'static) -> Lines {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut reader = BufReader::new(read);
        loop {
            let mut line = String::new();
            let read = (&mut reader)
                .take(wire::MAX_LINE as u64 + 1)
                .read_line(&mut line)
                .await;
            let message = match read {
                Ok(0) => return,
                Ok(n) if n > wire::MAX_LINE => {
                    Err(format!("sent a line longer than {} bytes", wire::MAX_LINE))
                }
                Ok(_) => wire::read(line.trim_end()),
                // A worker killed mid-line is a crash, seen when its process ends.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
                Err(e) => Err(format!("sent a line that cannot be read: {e}")),
            };
            let end = message.is_err();
            if tx.send(message).await.is_err() || end {
                return;
            }
        }
    });
    rx
}

/// The last lines a worker printed, for messages about it.
#[derive(Default)]
struct Tail {
    lines: Arc<Mutex<VecDeque<String>>>,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Tail {
    /// Keeps reading `out` (so that the worker never blocks on a full pipe).
    fn follow(&mut self, out: Option<impl AsyncRead + Unpin + Send + 'static>) {
        let Some(out) = out else { return };
        let tail = self.lines.clone();
        self.readers.push(tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!("worker: {line}");
                let mut t = tail.lock().expect("tail lock");
                if t.len() == TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }));
    }

    /// Once the worker has exited: waits (at most a second, in case a process it started
    /// still holds its output open) until everything it printed is read.
    async fn read_to_end(&mut self) {
        let readers = std::mem::take(&mut self.readers);
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            futures_util::future::join_all(readers),
        )
        .await;
    }

    /// ` (its last line: …)`, or nothing when it printed nothing.
    fn last(&self) -> String {
        let t = self.lines.lock().expect("tail lock");
        t.iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!(" (its last line: {})", l.trim()))
            .unwrap_or_default()
    }
}

/// Removes a worker's socket file when its life ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
