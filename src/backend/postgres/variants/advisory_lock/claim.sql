-- Que-style claim: the first pending job whose advisory lock this transaction takes (see
-- migrations/advisory_lock/0001_claim_function.sql). No row is written; the lock lasts until
-- the worker's transaction ends.
SELECT id, type, payload FROM claim_advisory()
