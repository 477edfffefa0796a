//! A job's `status` column, as a type: the seed's four values.

use serde::{Deserialize, Serialize};
use sqlx::Postgres;
use sqlx::error::BoxDynError;
use sqlx::mysql::{MySql, MySqlTypeInfo, MySqlValueRef};
use sqlx::postgres::{PgTypeInfo, PgValueRef};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Pending,
    Processing,
    Done,
    DeadLetter,
}

impl JobStatus {
    pub const ALL: [JobStatus; 4] = [
        JobStatus::Pending,
        JobStatus::Processing,
        JobStatus::Done,
        JobStatus::DeadLetter,
    ];

    /// The value in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Processing => "processing",
            JobStatus::Done => "done",
            JobStatus::DeadLetter => "dead_letter",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// A job in this status is finished: no worker will touch it again.
    pub fn is_final(self) -> bool {
        matches!(self, JobStatus::Done | JobStatus::DeadLetter)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl sqlx::Type<Postgres> for JobStatus {
    fn type_info() -> PgTypeInfo {
        <&str as sqlx::Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <&str as sqlx::Type<Postgres>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, Postgres> for JobStatus {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let s = <&str as sqlx::Decode<Postgres>>::decode(value)?;
        JobStatus::parse(s).ok_or_else(|| format!("unknown job status {s:?}").into())
    }
}

impl sqlx::Type<MySql> for JobStatus {
    fn type_info() -> MySqlTypeInfo {
        <&str as sqlx::Type<MySql>>::type_info()
    }

    fn compatible(ty: &MySqlTypeInfo) -> bool {
        <&str as sqlx::Type<MySql>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, MySql> for JobStatus {
    fn decode(value: MySqlValueRef<'r>) -> Result<Self, BoxDynError> {
        let s = <&str as sqlx::Decode<MySql>>::decode(value)?;
        JobStatus::parse(s).ok_or_else(|| format!("unknown job status {s:?}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_as_itself() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(JobStatus::parse("open"), None);
        assert_eq!(JobStatus::ALL.iter().filter(|s| s.is_final()).count(), 2);
    }
}
