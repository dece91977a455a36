"""The Lua scripts of the Redis engine: each check-and-change is one atomic step.

Fencing lives here: a lease is a hash ``jarvis:lease:TASK`` {token, worker, entry} with a
PX expiry; renew, complete and give back act only when the caller's token is the one in
it. ``jarvis:carried`` maps a task to the stream entry that carries it, so a task is
dispatched once and a superseded entry is acknowledged and dropped. A task entry's
``memories`` (what the coordinator recalled for it) go along when it is given back or
queued again. ``jarvis:ended`` keeps the token of the one outcome on its way per task:
the coordinator writes an outcome entry only when its token is that one (an outcome put
on ``jarvis:events`` by hand, by a worker that lost its lease, is refused there). An
entry is deleted
(XDEL) once acknowledged: the stream holds only tasks waiting or running.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

DISPATCH = """
-- KEYS: tasks, carried, ended; ARGV: task, text, channels, attempt, force, memories
if ARGV[5] ~= '1' and (redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1
    or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1) then return false end
local entry = {'task', ARGV[1], 'text', ARGV[2], 'channels', ARGV[3], 'attempt', ARGV[4]}
if ARGV[6] and ARGV[6] ~= '' then table.insert(entry, 'memories'); table.insert(entry, ARGV[6]) end
local id = redis.call('XADD', KEYS[1], '*', unpack(entry))
redis.call('HSET', KEYS[2], ARGV[1], id)
return id
"""

LEASE = """
-- KEYS: tasks, carried, lease; ARGV: group, task, entry, token, worker, ms
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[3] then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
  redis.call('XDEL', KEYS[1], ARGV[3])
  return 'stale'
end
if redis.call('EXISTS', KEYS[3]) == 1 then return 'held' end
redis.call('HSET', KEYS[3], 'token', ARGV[4], 'worker', ARGV[5], 'entry', ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[6])
return 'ok'
"""

RENEW = """
-- KEYS: lease, tasks; ARGV: token, ms, group, worker, entry
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('XCLAIM', KEYS[2], ARGV[3], ARGV[4], 0, ARGV[5], 'JUSTID')
return 1
"""

COMPLETE = """
-- KEYS: lease, tasks, carried, events, ended
-- ARGV: token, group, entry, task, worker, status, summary, attempt
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[5], ARGV[4], ARGV[1])
redis.call('XADD', KEYS[4], '*', 'type', 'outcome', 'task', ARGV[4], 'worker', ARGV[5],
  'status', ARGV[6], 'summary', ARGV[7], 'attempt', ARGV[8], 'token', ARGV[1])
redis.call('XACK', KEYS[2], ARGV[2], ARGV[3])
redis.call('XDEL', KEYS[2], ARGV[3])
if redis.call('HGET', KEYS[3], ARGV[4]) == ARGV[3] then redis.call('HDEL', KEYS[3], ARGV[4]) end
redis.call('DEL', KEYS[1])
return 1
"""

GIVE_BACK = """
-- KEYS: lease, tasks, carried; ARGV: token, group, entry, task, text, channels, attempt,
-- memories
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return false end
redis.call('XACK', KEYS[2], ARGV[2], ARGV[3])
redis.call('XDEL', KEYS[2], ARGV[3])
redis.call('DEL', KEYS[1])
local entry = {'task', ARGV[4], 'text', ARGV[5], 'channels', ARGV[6], 'attempt', ARGV[7]}
if ARGV[8] and ARGV[8] ~= '' then table.insert(entry, 'memories'); table.insert(entry, ARGV[8]) end
local id = redis.call('XADD', KEYS[2], '*', unpack(entry))
redis.call('HSET', KEYS[3], ARGV[4], id)
return id
"""

REAP = """
-- the janitor, for one entry it claimed because it sat idle past the lease time
-- KEYS: lease, tasks, carried, events, ended
-- ARGV: group, entry, task, text, channels, attempt, cap, reason, memories, token
local holder = redis.call('HGET', KEYS[1], 'worker')
if holder and redis.call('HGET', KEYS[1], 'entry') == ARGV[2] then
  redis.call('XCLAIM', KEYS[2], ARGV[1], holder, 0, ARGV[2], 'JUSTID')
  return 'held'
end
redis.call('XACK', KEYS[2], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[2], ARGV[2])
if redis.call('HGET', KEYS[3], ARGV[3]) ~= ARGV[2] then return 'stale' end
local attempt = tonumber(ARGV[6])
if attempt >= tonumber(ARGV[7]) then
  redis.call('HDEL', KEYS[3], ARGV[3])
  redis.call('HSET', KEYS[5], ARGV[3], ARGV[10])
  redis.call('XADD', KEYS[4], '*', 'type', 'outcome', 'task', ARGV[3], 'worker', '',
    'status', 'failed', 'summary', ARGV[8], 'attempt', ARGV[6], 'token', ARGV[10])
  return 'failed'
end
local entry = {'task', ARGV[3], 'text', ARGV[4], 'channels', ARGV[5],
  'attempt', tostring(attempt + 1)}
if ARGV[9] and ARGV[9] ~= '' then table.insert(entry, 'memories'); table.insert(entry, ARGV[9]) end
local id = redis.call('XADD', KEYS[2], '*', unpack(entry))
redis.call('HSET', KEYS[3], ARGV[3], id)
return 'again'
"""
