-- Orders whose business transaction committed.
SELECT count(*) FROM orders WHERE status = 'paid'
