-- The article's business update, run in the same transaction as the job insert.
UPDATE orders SET status = 'paid' WHERE id = $1
