//! The bystander's statements on PostgreSQL: a table of its own in the run's schema. The
//! steps are the SQL engines' (`sql::bystander`).

use super::link::PgLink;
use crate::backend::error::BackendError;
use crate::backend::seam::Bystand;
use crate::backend::sql::bystander::{self, BystanderSql};
use async_trait::async_trait;
use sqlx::Postgres;

const SQL: BystanderSql = BystanderSql {
    table: include_str!("bystander/table.sql"),
    fill: include_str!("bystander/fill.sql"),
    read: include_str!("bystander/read.sql"),
    update: include_str!("bystander/update.sql"),
    analyze: "ANALYZE bystander",
    before_fill: |_| None,
};

#[async_trait]
impl Bystand for PgLink {
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        Ok(bystander::install::<Postgres>(&mut self.conn, &SQL, rows).await?)
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        Ok(bystander::touch::<Postgres>(&mut self.conn, &SQL, true, id).await?)
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        Ok(bystander::touch::<Postgres>(&mut self.conn, &SQL, false, id).await?)
    }
}
