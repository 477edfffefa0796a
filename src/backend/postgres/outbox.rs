//! The seed's transactional outbox on PostgreSQL: the `orders` table, the business update
//! and the job's insert in one transaction, and what the proof reads of the promise.

use super::link::PgLink;
use crate::backend::error::BackendError;
use crate::backend::job::{Insert, NewJob};
use crate::backend::seam::Outbox;
use async_trait::async_trait;

const OUTBOX_SCHEMA: &str = include_str!("../../../migrations/outbox/0001_orders.sql");
const OUTBOX_ORDERS: &str = include_str!("outbox_orders.sql");
const OUTBOX_CHECK: &str = include_str!("outbox_check.sql");
const OUTBOX_PAID: &str = include_str!("outbox_paid.sql");

#[async_trait]
impl Outbox for PgLink {
    async fn install_outbox(&mut self, orders: u64) -> Result<(), BackendError> {
        sqlx::raw_sql(OUTBOX_SCHEMA).execute(&mut self.conn).await?;
        sqlx::query(OUTBOX_ORDERS)
            .bind(orders as i64)
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }

    async fn enqueue_in_outbox(
        &mut self,
        job: &NewJob,
        order: i64,
        roll_back: bool,
    ) -> Result<Insert, (BackendError, bool)> {
        let before = |e: sqlx::Error| (BackendError::from(e), false);
        self.execute("BEGIN").await.map_err(before)?;
        let id = match self.outbox_insert(job, order).await {
            Ok(id) => id,
            Err(e) => {
                let _ = self.execute("ROLLBACK").await;
                return Err(before(e));
            }
        };
        if roll_back {
            self.execute("ROLLBACK").await.map_err(before)?;
            return Ok(Insert::RolledBack);
        }
        self.execute("COMMIT")
            .await
            .map_err(|e| (BackendError::from(e), true))?;
        Ok(Insert::Committed(id))
    }

    async fn paid_orders(&mut self) -> Result<i64, BackendError> {
        Ok(sqlx::query_scalar(OUTBOX_PAID)
            .fetch_one(&mut self.conn)
            .await?)
    }

    async fn outbox_problems(&mut self) -> Result<Vec<(i64, String, i64)>, BackendError> {
        Ok(sqlx::query_as(OUTBOX_CHECK)
            .fetch_all(&mut self.conn)
            .await?)
    }
}
