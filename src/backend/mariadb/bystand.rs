//! The bystander's statements on MariaDB: an InnoDB table of its own in the run's database.
//! The steps are the SQL engines' (`sql::bystander`).

use crate::backend::sql::bystander::BystanderSql;

pub(super) const SQL: BystanderSql = BystanderSql {
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
