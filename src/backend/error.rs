//! What went wrong on a backend, classified the one way fleets, the sampler and the proof
//! need: must the connection be replaced (and is a commit's outcome then unknown), can
//! retrying help at all, and how the message reads.

/// How an error bears on what the harness does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The connection is unusable and must be replaced; a commit under way may or may not
    /// have happened (connection loss, a session ended by the server or an operator).
    Connection,
    /// Retrying cannot help: the server rejects the statement itself (bad data, a broken
    /// constraint, syntax, permissions, a missing object, a refused login).
    Permanent,
    /// Worth trying again: serialization failures, deadlocks, timeouts, shortages.
    Transient,
    /// The backend does not have this operation (an engine without the feature).
    Unsupported,
}

/// An error from a backend, with its class and the server's own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    pub class: ErrorClass,
    /// The server's message (first line), or the client's when the server said nothing.
    pub message: String,
    /// The server's error code (SQLSTATE), when it gave one.
    pub code: Option<String>,
}

impl BackendError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> BackendError {
        BackendError {
            class,
            message: message.into(),
            code: None,
        }
    }

    /// An operation this backend does not have.
    pub fn unsupported(what: &str, backend: &str) -> BackendError {
        BackendError::new(
            ErrorClass::Unsupported,
            format!("{what} is not available on {backend}"),
        )
    }

    /// The connection must be replaced (and a commit under way may have happened).
    pub fn is_connection(&self) -> bool {
        self.class == ErrorClass::Connection
    }

    /// Retrying cannot help.
    pub fn is_permanent(&self) -> bool {
        matches!(self.class, ErrorClass::Permanent | ErrorClass::Unsupported)
    }

    /// Whether a commit that failed this way may have committed after all: any connection
    /// error. A server-side termination is no proof of a rollback: the `COMMIT` can finish
    /// just before the session is killed. The table settles such outcomes after the run.
    pub fn outcome_unknown(&self) -> bool {
        self.is_connection()
    }

    /// The message and code on one line, as it was (for a fatal error's report).
    pub fn line(&self) -> String {
        let message = first_line(&self.message);
        let text = match &self.code {
            Some(code) => format!("{message} (SQLSTATE {code})"),
            None => message.to_string(),
        };
        text.chars().take(300).collect()
    }

    /// A message short enough to group by: the first line, without ids or numbers.
    pub fn kind(&self) -> String {
        let message = first_line(&self.message);
        let text = match &self.code {
            Some(code) => format!("{message} ({code})"),
            None => message.to_string(),
        };
        text.chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .take(160)
            .collect()
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_group_messages_that_differ_in_numbers() {
        let e = |m: &str| BackendError {
            class: ErrorClass::Transient,
            message: m.into(),
            code: Some("40P01".into()),
        };
        assert_eq!(
            e("deadlock detected on 123").kind(),
            e("deadlock detected on 456").kind()
        );
        assert_eq!(
            e("deadlock detected\nDETAIL: x").line(),
            "deadlock detected (SQLSTATE 40P01)"
        );
        assert!(BackendError::unsupported("VACUUM", "the in-memory queue").is_permanent());
    }
}
