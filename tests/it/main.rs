//! Integration tests. Every test that touches the queue talks to a real database: one
//! PostgreSQL and one MariaDB server shared by all tests of this binary (see `support`),
//! each run in its own schema (a database on MariaDB).

mod accounting;
mod capacity;
mod cli;
mod docs;
mod faults;
mod gate;
mod kafka;
mod kafka_loss;
mod libraries;
mod limits;
mod mariadb;
mod matrix;
mod plans;
mod prove;
mod providers;
mod rabbitmq;
mod redis;
mod registry;
mod reports;
mod runs;
mod stale;
mod support;
mod team;
mod upsets;
mod validation;
mod variants;
mod versions;
