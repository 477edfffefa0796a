-- A point read by primary key.
SELECT counter, note FROM bystander WHERE id = ?
