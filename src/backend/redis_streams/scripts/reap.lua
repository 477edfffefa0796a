-- Reaper: takes over entries pending longer than ARGV[3] ms (XAUTOCLAIM from cursor
-- ARGV[4]) and puts each job back as a new entry (the old one acknowledged and deleted),
-- or, counting the reap as an attempt (ARGV[5] = 1), dead-letters it at max_retries.
-- KEYS: stream, state, dead.  ARGV: group, consumer, min idle ms, cursor, counted, max.
-- Returns the next cursor, then (id, dead 1/0) per job.
local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', 100)
local out = {r[1]}
for _, e in ipairs(r[2]) do
  local f = {}
  for i = 1, #e[2], 2 do
    f[e[2][i]] = e[2][i + 1]
  end
  redis.call('XACK', KEYS[1], ARGV[1], e[1])
  redis.call('XDEL', KEYS[1], e[1])
  local state = redis.call('HGET', KEYS[2], f.id) or ''
  local retries = tonumber(string.match(state, ':(%d+)$') or '0')
  if ARGV[5] == '1' then
    retries = retries + 1
  end
  if ARGV[5] == '1' and retries >= tonumber(ARGV[6]) then
    redis.call('XADD', KEYS[3], '*', 'id', f.id, 'retries', retries, 'error', 'reaped')
    redis.call('HSET', KEYS[2], f.id, 'dead_letter:' .. retries)
    out[#out + 1] = f.id
    out[#out + 1] = 1
  else
    redis.call('XADD', KEYS[1], '*', 'id', f.id, 'type', f.type, 'payload', f.payload)
    redis.call('HSET', KEYS[2], f.id, 'pending:' .. retries)
    out[#out + 1] = f.id
    out[#out + 1] = 0
  end
end
return out
