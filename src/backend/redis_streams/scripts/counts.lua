-- One consistent count of where the jobs are: entries in the stream (waiting, backing off or
-- being worked), of those the ones in the group's pending list (being worked), the ones
-- backing off, dead-lettered jobs, and jobs ever enqueued.
-- KEYS: stream, delayed, dead, state.  ARGV: group.
local pel = redis.pcall('XPENDING', KEYS[1], ARGV[1])
local working = 0
if type(pel) == 'table' and not pel.err then
  working = pel[1]
end
return {redis.call('XLEN', KEYS[1]), working, redis.call('ZCARD', KEYS[2]),
        redis.call('XLEN', KEYS[3]), redis.call('HLEN', KEYS[4])}
