//! Integration tests. Every test that touches the queue talks to a real PostgreSQL: one
//! server shared by all tests of this binary (see `support`), each run in its own schema.

mod accounting;
mod capacity;
mod cli;
mod faults;
mod matrix;
mod providers;
mod reports;
mod runs;
mod support;
mod validation;
mod variants;
