//! The dbq-bench handler protocol (version 1, docs/libraries.md) for a Rust library's worker:
//! a hello with the library and its settings, then one `start` per handler run, answered by
//! `run` (sleep, then done, fail or crash), and the outcome reported. When the harness goes
//! away, the process exits, so that no worker outlives its run.

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::oneshot;

const PROTOCOL: u64 = 1;

/// What the harness said the handler does for one run.
struct Run {
    sleep_s: f64,
    then: String,
}

type Waiting = HashMap<i64, VecDeque<oneshot::Sender<Run>>>;

pub struct Harness {
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    waiting: std::sync::Arc<Mutex<Waiting>>,
}

impl Harness {
    /// Says hello (`library`, and the `settings` the glue read and chose) on
    /// $DBQ_BENCH_SOCKET and waits for the welcome.
    pub async fn connect(
        library: &str,
        settings: BTreeMap<String, Value>,
    ) -> Result<Harness, Box<dyn std::error::Error>> {
        let socket = std::env::var("DBQ_BENCH_SOCKET")?;
        let (read, mut write) = UnixStream::connect(socket).await?.into_split();
        let hello =
            json!({"hello": {"protocol": PROTOCOL, "library": library, "settings": settings}});
        write.write_all(format!("{hello}\n").as_bytes()).await?;
        let mut lines = BufReader::new(read).lines();
        let welcome = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await??;
        let expected = json!({"welcome": {"protocol": PROTOCOL}});
        if welcome
            .as_deref()
            .map(serde_json::from_str::<Value>)
            .and_then(Result::ok)
            != Some(expected)
        {
            return Err(format!("dbq-bench answered {welcome:?}, not a protocol 1 welcome").into());
        }
        let waiting = std::sync::Arc::new(Mutex::new(Waiting::new()));
        let replies = waiting.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(reply) = serde_json::from_str::<Value>(&line) else {
                    break;
                };
                let run = &reply["run"];
                let job = run["job"].as_i64().unwrap_or_default();
                let sender = replies
                    .lock()
                    .unwrap()
                    .get_mut(&job)
                    .and_then(VecDeque::pop_front);
                if let Some(sender) = sender {
                    let _ = sender.send(Run {
                        sleep_s: run["sleep_s"].as_f64().unwrap_or_default(),
                        then: run["then"].as_str().unwrap_or("done").to_string(),
                    });
                }
            }
            // The harness is gone: so is its run.
            std::process::exit(3);
        });
        Ok(Harness {
            writer: tokio::sync::Mutex::new(write),
            waiting,
        })
    }

    /// Runs the scenario's handler for `job` (attempt `attempt`; `retrying`: the library
    /// runs it again if this run fails): Ok on success, Err for the library's retry path;
    /// a crashing job kills this process.
    pub async fn handle(
        &self,
        job: i64,
        payload: Value,
        attempt: u32,
        retrying: bool,
    ) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap()
            .entry(job)
            .or_default()
            .push_back(tx);
        self.send(json!({"start": {"job": job, "attempt": attempt, "payload": payload}}))
            .await;
        let run = rx.await.map_err(|_| "dbq-bench went away".to_string())?;
        tokio::time::sleep(Duration::from_secs_f64(run.sleep_s)).await;
        match run.then.as_str() {
            "crash" => {
                // SAFETY: kill(2) on this process; nothing is left to clean up.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                unreachable!("killed")
            }
            "fail" => {
                self.send(json!({"fail": {"job": job, "retrying": retrying}}))
                    .await;
                Err(format!("dbq-bench: job {job} fails this run"))
            }
            _ => {
                self.send(json!({"done": {"job": job}})).await;
                Ok(())
            }
        }
    }

    async fn send(&self, message: Value) {
        let mut w = self.writer.lock().await;
        let _ = w.write_all(format!("{message}\n").as_bytes()).await;
    }
}
