-- Outbox proof: every paid order has exactly one job, and no job belongs to an order that
-- is not paid (its business transaction rolled back). Returns the offending orders.
SELECT o.id AS order_id, o.status, count(j.id) AS jobs
FROM   orders o
LEFT   JOIN job_queue j ON j.payload->>'order' = o.id::text
GROUP  BY o.id, o.status
HAVING (o.status = 'paid' AND count(j.id) <> 1)
    OR (o.status <> 'paid' AND count(j.id) > 0)
ORDER  BY o.id
