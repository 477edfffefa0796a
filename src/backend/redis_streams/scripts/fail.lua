-- Failure: acknowledges the entry and counts the attempt. Below max_retries the entry waits
-- in the delayed set until its back-off is over (the claim moves it back); at max_retries
-- the job goes to the dead-letter stream. An entry no longer pending for this group (the
-- reaper took it back) is left alone.
-- KEYS: stream, state, delayed, dead.  ARGV: group, entry, id, max_retries, delay ms, error.
-- Returns 1 dead-lettered, 0 retried, -1 no longer this worker's.
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return -1
end
local state = redis.call('HGET', KEYS[2], ARGV[3]) or ''
local retries = tonumber(string.match(state, ':(%d+)$') or '0') + 1
if retries >= tonumber(ARGV[4]) then
  redis.call('XADD', KEYS[4], '*', 'id', ARGV[3], 'retries', retries, 'error', ARGV[6])
  redis.call('XDEL', KEYS[1], ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[3], 'dead_letter:' .. retries)
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], 'pending:' .. retries)
return 0
