//! dbq-bench: a load-testing and benchmark harness for job queues built inside PostgreSQL
//! (`SELECT … FOR UPDATE SKIP LOCKED`).
//!
//! A run flows one way through these stages, one module each:
//! scenario file → [`scenario::Plan`] → [`db`] (provision Postgres) → [`queue`] (the variant's
//! SQL) → [`fleet`] (producers and consumers, emitting events) → [`metrics`] (recorder,
//! ledger) → [`accounting`] (the proof) → [`report`] (summary and files). [`run`] puts the
//! stages in order.

pub mod accounting;
pub mod calibrate;
pub mod capacity;
pub mod clock;
pub mod compare;
pub mod db;
pub mod error;
pub mod faults;
pub mod fleet;
pub mod matrix;
pub mod metrics;
pub mod progress;
pub mod queue;
pub mod report;
pub mod run;
pub mod scenario;
