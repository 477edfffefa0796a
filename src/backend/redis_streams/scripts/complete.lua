-- Complete: acknowledges and deletes each job's entry and records the job 'done' (and, when
-- the completion audit is on, counts the completion) in the same atomic step. An entry no
-- longer pending for this group (the reaper took it back) is left alone: a stale
-- completion, as fail.lua leaves a stale failure.
-- KEYS: stream, state, audit, audit_on.  ARGV: group, then (entry, id) per job.
-- Returns the ids of the stale completions.
local audit = redis.call('EXISTS', KEYS[4]) == 1
local stale = {}
for i = 2, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 0 then
    stale[#stale + 1] = ARGV[i + 1]
  else
    redis.call('XDEL', KEYS[1], ARGV[i])
    local state = redis.call('HGET', KEYS[2], ARGV[i + 1]) or ''
    redis.call('HSET', KEYS[2], ARGV[i + 1], 'done:' .. (string.match(state, ':(%d+)$') or '0'))
    if audit then
      redis.call('HINCRBY', KEYS[3], ARGV[i + 1], 1)
    end
  end
end
return stale
