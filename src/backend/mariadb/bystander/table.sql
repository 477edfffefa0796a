-- The bystander's table: unrelated to the queue, in the run's database.
CREATE TABLE bystander (
    id      BIGINT       NOT NULL PRIMARY KEY,
    counter BIGINT       NOT NULL DEFAULT 0,
    note    VARCHAR(64)  NOT NULL
) ENGINE = InnoDB
