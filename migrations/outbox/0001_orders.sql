-- The business table of the article's transactional-outbox example
-- (UPDATE orders SET status = 'paid' WHERE id = :id). Rows are created before the load;
-- each outbox enqueue pays one of them in the same transaction as its job insert.
CREATE TABLE orders (
  id      BIGINT PRIMARY KEY,
  status  VARCHAR(20) NOT NULL DEFAULT 'new'
);
