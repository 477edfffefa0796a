//! The bystander's statements on PostgreSQL: a table of its own in the run's schema. The
//! steps are the SQL engines' (`sql::bystander`, on a link by `sql::link`).

use crate::backend::sql::bystander::BystanderSql;

pub(super) const SQL: BystanderSql = BystanderSql {
    table: include_str!("bystander/table.sql"),
    fill: include_str!("bystander/fill.sql"),
    read: include_str!("bystander/read.sql"),
    update: include_str!("bystander/update.sql"),
    analyze: "ANALYZE bystander",
    before_fill: |_| None,
};
