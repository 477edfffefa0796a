//! dbq-bench: a load-testing and benchmark harness for job queues built inside a database
//! (`SELECT … FOR UPDATE SKIP LOCKED`).
//!
//! A run flows one way through these stages, one module each:
//! scenario file → [`scenario::Plan`] → [`provider`] (a server) → [`backend`] (the queue's
//! design installed, behind one seam) → [`fleet`] (producers and consumers, emitting events)
//! → [`metrics`] (recorder, ledger) → [`accounting`] (the proof) → [`report`] (summary and
//! files). [`run`] puts the stages in order; the studies ([`capacity`], [`matrix`],
//! [`calibrate`], [`compare`]) drive it. [`engine`] is the one table of what each engine
//! offers, which every layer reads.

pub mod accounting;
pub mod backend;
pub mod calibrate;
pub mod capacity;
pub mod ceiling;
pub mod clock;
pub mod compare;
pub mod engine;
pub mod error;
pub mod faults;
pub mod fleet;
pub mod matrix;
pub mod metrics;
pub mod named_params;
pub mod progress;
pub mod provider;
pub mod report;
pub mod run;
pub mod scenario;
pub mod status;
