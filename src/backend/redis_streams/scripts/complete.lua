-- Complete: acknowledges and deletes each job's entry and records the job 'done' (and, when
-- the completion audit is on, counts the completion) in the same atomic step.
-- KEYS: stream, state, audit, audit_on.  ARGV: group, then (entry, id) per job.
local audit = redis.call('EXISTS', KEYS[4]) == 1
for i = 2, #ARGV, 2 do
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
  local state = redis.call('HGET', KEYS[2], ARGV[i + 1]) or ''
  redis.call('HSET', KEYS[2], ARGV[i + 1], 'done:' .. (string.match(state, ':(%d+)$') or '0'))
  if audit then
    redis.call('HINCRBY', KEYS[3], ARGV[i + 1], 1)
  end
end
return (#ARGV - 1) / 2
