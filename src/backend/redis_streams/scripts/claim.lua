-- Claim: first moves retries whose back-off is over back into the stream (a new entry, the
-- old one deleted), then reads up to ARGV[3] new entries for consumer ARGV[2] of group
-- ARGV[1] (they enter the group's pending entries list) and marks their jobs 'processing'.
-- A group lost with the server's data is made again, reading the stream from its start.
-- KEYS: stream, state, delayed.  ARGV: group, consumer, count.
-- Returns (entry, id, type, retries, payload) per job.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)) do
  local e = redis.call('XRANGE', KEYS[1], old, old)[1]
  if e then
    redis.call('XADD', KEYS[1], '*', unpack(e[2]))
    redis.call('XDEL', KEYS[1], old)
  end
  redis.call('ZREM', KEYS[3], old)
end
local read = {'XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>'}
local r = redis.pcall(unpack(read))
if type(r) == 'table' and r.err then
  if not string.find(r.err, 'NOGROUP') then
    return r
  end
  redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
  r = redis.call(unpack(read))
end
local out = {}
if not r then
  return out
end
for _, e in ipairs(r[1][2]) do
  local f = {}
  for i = 1, #e[2], 2 do
    f[e[2][i]] = e[2][i + 1]
  end
  local state = redis.call('HGET', KEYS[2], f.id) or ''
  local retries = string.match(state, ':(%d+)$') or '0'
  redis.call('HSET', KEYS[2], f.id, 'processing:' .. retries)
  for _, v in ipairs({e[1], f.id, f.type, retries, f.payload}) do
    out[#out + 1] = v
  end
end
return out
