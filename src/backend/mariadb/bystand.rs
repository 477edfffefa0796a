//! The bystander's statements on MariaDB: an InnoDB table of its own in the run's database.
//! The steps are the SQL engines' (`sql::bystander`).

use super::link::MariaLink;
use crate::backend::error::BackendError;
use crate::backend::seam::Bystand;
use crate::backend::sql::bystander::{self, BystanderSql};
use async_trait::async_trait;
use sqlx::MySql;

const SQL: BystanderSql = BystanderSql {
    table: include_str!("bystander/table.sql"),
    fill: include_str!("bystander/fill.sql"),
    read: include_str!("bystander/read.sql"),
    update: include_str!("bystander/update.sql"),
    // Dialect: MariaDB's statement is ANALYZE TABLE.
    analyze: "ANALYZE TABLE bystander",
    // Dialect: the fill's recursive CTE takes one iteration per row, and the server allows
    // 1,000 by default.
    before_fill: |rows| Some(format!("SET SESSION max_recursive_iterations = {rows}")),
};

#[async_trait]
impl Bystand for MariaLink {
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        Ok(bystander::install::<MySql>(&mut self.conn, &SQL, rows).await?)
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        Ok(bystander::touch::<MySql>(&mut self.conn, &SQL, true, id).await?)
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        Ok(bystander::touch::<MySql>(&mut self.conn, &SQL, false, id).await?)
    }
}
