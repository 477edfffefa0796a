-- Enqueue: each job gets the next id, one stream entry, its state 'pending:0' and its
-- payload key (how in-doubt inserts are found again). An id is never at or below ARGV[1],
-- the highest id the run has seen, so ids stay unique even when the server lost its counter.
-- KEYS: stream, state, seq, keys.  ARGV: floor, then (type, payload, key) per job.
-- Returns the ids.
local floor = tonumber(ARGV[1])
local ids = {}
for i = 2, #ARGV, 3 do
  local id = redis.call('INCR', KEYS[3])
  if id <= floor then
    id = floor + 1
    redis.call('SET', KEYS[3], id)
  end
  floor = id
  redis.call('XADD', KEYS[1], '*', 'id', id, 'type', ARGV[i], 'payload', ARGV[i + 1])
  redis.call('HSET', KEYS[2], id, 'pending:0')
  if ARGV[i + 2] ~= '' then
    redis.call('HSET', KEYS[4], ARGV[i + 2], id)
  end
  ids[#ids + 1] = id
end
return ids
