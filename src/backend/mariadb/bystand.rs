//! The bystander's statements on MariaDB: an InnoDB table of its own in the run's database.

use super::link::MariaLink;
use crate::backend::error::BackendError;
use crate::backend::seam::Bystand;
use async_trait::async_trait;

const TABLE: &str = include_str!("bystander/table.sql");
const FILL: &str = include_str!("bystander/fill.sql");
const READ: &str = include_str!("bystander/read.sql");
const UPDATE: &str = include_str!("bystander/update.sql");

#[async_trait]
impl Bystand for MariaLink {
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        self.execute(TABLE).await?;
        // The fill's recursive CTE takes one iteration per row (the server allows 1,000
        // by default).
        self.execute(&format!("SET SESSION max_recursive_iterations = {rows}"))
            .await?;
        sqlx::query(FILL)
            .bind(i64::from(rows))
            .execute(&mut self.conn)
            .await?;
        self.execute("ANALYZE TABLE bystander").await?;
        Ok(())
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        sqlx::query(READ)
            .bind(id)
            .fetch_optional(&mut self.conn)
            .await?;
        Ok(())
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        sqlx::query(UPDATE).bind(id).execute(&mut self.conn).await?;
        Ok(())
    }
}

impl crate::backend::seam::Link for MariaLink {
    fn bystander(&mut self) -> Option<&mut dyn crate::backend::seam::Bystand> {
        Some(self)
    }
    fn planner(&mut self) -> Option<&mut dyn crate::backend::seam::Planner> {
        Some(self)
    }
}
