-- A single-row update by primary key.
UPDATE bystander SET counter = counter + 1 WHERE id = ?
