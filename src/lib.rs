//! dbq-bench: a load-testing and benchmark harness for job queues: a queue inside
//! PostgreSQL or MariaDB (`SELECT … FOR UPDATE SKIP LOCKED`) against the brokers RabbitMQ and
//! Redis Streams, on real servers, with every job accounted for.
//!
//! A run flows one way through these stages, one module each:
//! scenario file → [`scenario::Plan`] → [`provider`] (a server) → [`backend`] (the queue's
//! design installed, behind one seam) → [`fleet`] (producers and consumers, emitting events)
//! → [`metrics`] (recorder, ledger) → [`accounting`] (the proof) → [`report`] (summary and
//! files). [`run`] puts the stages in order; the studies ([`capacity`], [`matrix`],
//! [`calibrate`], [`compare`]) drive it. Each engine is one folder under [`backend`] with
//! its facts, listed by one line of [`backend::registry`]; every layer asks the registry.

pub mod accounting;
pub mod backend;
pub mod calibrate;
pub mod capacity;
pub mod ceiling;
pub mod clock;
pub mod compare;
pub mod error;
pub mod faults;
pub mod fleet;
pub mod gate;
pub mod leftovers;
pub mod matrix;
pub mod metrics;
pub mod named_params;
pub mod progress;
pub mod provider;
pub mod redact;
pub mod report;
pub mod run;
pub mod scenario;
pub mod status;
pub mod thresholds;
pub mod version;
