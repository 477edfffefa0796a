-- The bystander's table: unrelated to the queue, in the run's schema.
CREATE TABLE bystander (
    id      bigint PRIMARY KEY,
    counter bigint NOT NULL DEFAULT 0,
    note    text   NOT NULL
)
