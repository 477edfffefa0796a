//! The three ways a command can fail, and the exit code each one maps to.
//!
//! Exit codes (documented in the README and docs/GUIDE.md): 0 ok, 1 the run failed, 2 bad input, 99 a threshold
//! failed, 130 interrupted.

use std::fmt;

/// Process exit codes, one per outcome a script may want to tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Ok = 0,
    RunFailed = 1,
    BadInput = 2,
    /// A threshold failed (as k6 does).
    ThresholdFailed = 99,
    Interrupted = 130,
}

/// Bad input: a file, key or flag the user must change. Always one line:
/// `SOURCE: KEY: REASON` (the key is left out when the whole source is at fault).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub source: String,
    pub key: Option<String>,
    pub reason: String,
}

impl InputError {
    pub fn new(
        source: impl Into<String>,
        key: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        InputError {
            source: source.into(),
            key: Some(key.into()),
            reason: reason.into(),
        }
    }

    pub fn whole(source: impl Into<String>, reason: impl Into<String>) -> Self {
        InputError {
            source: source.into(),
            key: None,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keep it on one line whatever the underlying parser produced.
        let reason = self.reason.replace('\n', " ");
        match &self.key {
            Some(key) => write!(f, "{}: {}: {}", self.source, key, reason.trim()),
            None => write!(f, "{}: {}", self.source, reason.trim()),
        }
    }
}

impl std::error::Error for InputError {}

/// Everything a command can end with other than success.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("{0:#}")]
    Run(#[from] anyhow::Error),
    #[error("interrupted")]
    Interrupted,
}

impl Failure {
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            Failure::Input(_) => ExitStatus::BadInput,
            Failure::Run(_) => ExitStatus::RunFailed,
            Failure::Interrupted => ExitStatus::Interrupted,
        }
    }
}
