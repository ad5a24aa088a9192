"""The Lua scripts behind :class:`~wakeful.store.redis_store.RedisStore`.

Redis runs a script with nothing else in between, so each one is a
transaction in one round trip. A script that stops half way keeps what it
wrote (Redis has no rollback), so every script checks everything first and
writes only afterwards.

Keys, all under the prefix ``P`` (``ARGV[1]``)::

    P seq                  INCR counter: the next event seq
    P ev:<id>              hash: seq session kind body status strategy reason
                           parallel_answer accepted_at consumed_at token consumed_by
                           attempts failure
    P pending:<session>    zset id -> seq: exactly the events with status pending
    P open:<session>       zset id -> accepted_at: every event not yet consumed
    P log                  zset id -> seq: every event
    P log:<session>        zset id -> seq: the session's events
    P sessions             set: sessions with events or messages
    P msgs:<session>       list of message JSON: the trajectory
    P meta:<session>       list of JSON {first, count, meta, at}: meta of a run of messages
    P calls:<session>      list of model-call JSON
    P quarantined          zset id -> seq: events with status quarantined
    P lease                string: the daemon that owns this prefix (SET NX PX)

With ``[store] fleet`` (several daemons on one prefix, ``P fleet:on`` set; the
fleet's own keys are listed in :mod:`~wakeful.store.fleet.session_scripts`)
an event not yet consumed also has one live entry in the stream ``P events``
(its id in the hash's ``entry`` field): the status changes below add it and
acknowledge it (XACK) in the same script, so an entry is acknowledged exactly
when its event is consumed or quarantined. Trajectory writes then carry the
session's fencing token and are refused (``{3, current}``) when it is not the
session's current one (``P fence:<session>``).

Keys are built inside the scripts from the prefix, not passed as KEYS: fine
on one Redis server, not on Redis Cluster (which needs every key declared).
A field that is ``None`` in Python is absent from the hash, so HMGET gives
``false`` and the client ``None``.
"""

from __future__ import annotations

EVENT_FIELDS = (
    "seq", "body", "status", "strategy", "reason", "parallel_answer", "accepted_at", "attempts",
    "failure",
)  # fmt: skip

_FIELDS_LUA = ", ".join(f"'{name}'" for name in EVENT_FIELDS)

# Shared by the scripts that change an event's status: keeps pending:<session>
# and open:<session> equal to what the hashes say.
_PRELUDE = """
local p = ARGV[1]
local fleet = redis.call('EXISTS', p .. 'fleet:on') == 1

-- Fleet: the event's live stream entry is acknowledged (it left the queue).
local function ack_entry(ek)
  local entry = redis.call('HGET', ek, 'entry')
  if entry then
    redis.call('XACK', p .. 'events', 'fleet', entry)
    redis.call('HDEL', ek, 'entry')
  end
end

-- Fleet: a pending event is announced: a new entry when it has none (it was
-- acknowledged: a retry), else its session's owner is woken on its control stream.
local function announce(id, session, ek)
  if redis.call('HEXISTS', ek, 'entry') == 0 then
    local entry = redis.call('XADD', p .. 'events', '*', 'id', id, 'session', session)
    redis.call('HSET', ek, 'entry', entry)
  else
    local owner = redis.call('GET', p .. 'owner:' .. session)
    if owner then
      redis.call('XADD', p .. 'ctl:' .. owner, 'MAXLEN', '~', 10000, '*', 'op', 'wake',
                 'session', session)
    end
  end
end

-- Fleet: nil when a trajectory write with this token may go ahead, else the
-- session's current token (another daemon took the session since).
local function fenced(session, token)
  if not fleet then return nil end
  local current = redis.call('GET', p .. 'fence:' .. session) or '0'
  if token ~= current then return current end
  return nil
end

local function restatus(id, new)
  local ek = p .. 'ev:' .. id
  local f = redis.call('HMGET', ek, 'session', 'seq', 'accepted_at')
  redis.call('HSET', ek, 'status', new)
  if new == 'pending' then
    redis.call('ZADD', p .. 'pending:' .. f[1], f[2], id)
  else
    redis.call('ZREM', p .. 'pending:' .. f[1], id)
  end
  if new == 'consumed' or new == 'quarantined' then
    redis.call('ZREM', p .. 'open:' .. f[1], id)
  else
    redis.call('ZADD', p .. 'open:' .. f[1], f[3], id)
  end
  if new == 'quarantined' then
    redis.call('ZADD', p .. 'quarantined', f[2], id)
  else
    redis.call('ZREM', p .. 'quarantined', id)
  end
  if fleet then
    if new == 'consumed' or new == 'quarantined' then
      ack_entry(ek)
    elseif new == 'pending' then
      announce(id, f[1], ek)
    end
  end
end

-- meta and now arrive as JSON text from Python: spliced in, never re-encoded.
local function meta_record(first, count, meta, now)
  return '{"first": ' .. first .. ', "count": ' .. count .. ', "meta": ' .. meta
    .. ', "at": ' .. now .. '}'
end

local function optional(ek, field, value)
  if string.sub(value, 1, 1) == '+' then
    redis.call('HSET', ek, field, string.sub(value, 2))
  end
end
"""

# ARGV: prefix, then per event: id, session, kind, body, status, +strategy|-, +reason|-,
# accepted_at, token, +cursor key|-, cursor value (set duplicate or not). -> per event:
# {1, seq} when stored; {0, token, <EVENT_FIELDS>...} when the id was seen before
# (earlier, or earlier in this batch).
APPEND = (
    _PRELUDE
    + f"""
local out = {{}}
for i = 2, #ARGV, 11 do
  local id, session, status, at = ARGV[i], ARGV[i + 1], ARGV[i + 4], ARGV[i + 7]
  local ek = p .. 'ev:' .. id
  if string.sub(ARGV[i + 9], 1, 1) == '+' then
    redis.call('HSET', p .. 'state', string.sub(ARGV[i + 9], 2), ARGV[i + 10])
  end
  if redis.call('EXISTS', ek) == 1 then
    local f = redis.call('HMGET', ek, 'token', {_FIELDS_LUA})
    table.insert(f, 1, 0)
    table.insert(out, f)
  else
    local seq = redis.call('INCR', p .. 'seq')
    redis.call('HSET', ek, 'seq', seq, 'session', session, 'kind', ARGV[i + 2],
               'body', ARGV[i + 3], 'status', status, 'accepted_at', at, 'token', ARGV[i + 8])
    optional(ek, 'strategy', ARGV[i + 5])
    optional(ek, 'reason', ARGV[i + 6])
    redis.call('ZADD', p .. 'log', seq, id)
    redis.call('ZADD', p .. 'log:' .. session, seq, id)
    redis.call('SADD', p .. 'sessions', session)
    if status ~= 'consumed' then
      redis.call('ZADD', p .. 'open:' .. session, at, id)
      if fleet then
        local entry = redis.call('XADD', p .. 'events', '*', 'id', id, 'session', session)
        redis.call('HSET', ek, 'entry', entry)
      end
    end
    if status == 'pending' then redis.call('ZADD', p .. 'pending:' .. session, seq, id) end
    table.insert(out, {{1, seq}})
  end
end
return out
"""
)

# ARGV: prefix, id, status, strategy, reason. Consumed events stay consumed.
SET_ROUTE = (
    _PRELUDE
    + """
local ek = p .. 'ev:' .. ARGV[2]
local status = redis.call('HGET', ek, 'status')
if not status or status == 'consumed' or status == 'quarantined' then return 0 end
redis.call('HSET', ek, 'strategy', ARGV[4], 'reason', ARGV[5])
restatus(ARGV[2], ARGV[3])
return 1
"""
)

# ARGV: prefix, id, answer. Only an event held for a side session takes an answer.
SET_PARALLEL_ANSWER = (
    _PRELUDE
    + """
local ek = p .. 'ev:' .. ARGV[2]
if redis.call('HGET', ek, 'status') ~= 'parallel' then return 0 end
redis.call('HSET', ek, 'parallel_answer', ARGV[3])
restatus(ARGV[2], 'pending')
return 1
"""
)

# ARGV: prefix, session, now, token, n, id_1..id_n, meta JSON or '', fencing token or '',
# message JSON... -> {1, n} done; {2, n} this token already did it (a retry after a lost
# reply); {0, found} some ids were not pending in the session, nothing written;
# {3, current} (fleet) the fencing token is not the session's current one, nothing written.
CONSUME = (
    _PRELUDE
    + """
local session, now, token, n = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local current = fenced(session, ARGV[7 + n])
if current then return {3, current} end
local seen, found, replay = {}, 0, n > 0
for i = 6, 5 + n do
  local id = ARGV[i]
  if not seen[id] then
    seen[id] = true
    local f = redis.call('HMGET', p .. 'ev:' .. id, 'session', 'status', 'consumed_by')
    if f[1] == session and f[2] == 'pending' then found = found + 1 end
    if not (f[1] == session and f[2] == 'consumed' and f[3] == token) then replay = false end
  end
end
if found ~= n then
  if replay then return {2, n} end
  return {0, found}
end
for i = 6, 5 + n do
  restatus(ARGV[i], 'consumed')
  redis.call('HSET', p .. 'ev:' .. ARGV[i], 'consumed_at', now, 'consumed_by', token)
end
local mk = p .. 'msgs:' .. session
local before = redis.call('LLEN', mk)
for i = 8 + n, #ARGV do redis.call('RPUSH', mk, ARGV[i]) end
local meta = ARGV[6 + n]
if meta ~= '' then
  redis.call('RPUSH', p .. 'meta:' .. session, meta_record(before, #ARGV - 7 - n, meta, now))
end
redis.call('SADD', p .. 'sessions', session)
return {1, n}
"""
)

# ARGV: prefix, session, now, meta JSON or '', fencing token or '', message JSON...
# -> {1, count} written; {3, current} (fleet) refused by the fencing check.
APPEND_MESSAGES = (
    _PRELUDE
    + """
local session, now, meta = ARGV[2], ARGV[3], ARGV[4]
local current = fenced(session, ARGV[5])
if current then return {3, current} end
local mk = p .. 'msgs:' .. session
local before = redis.call('LLEN', mk)
for i = 6, #ARGV do redis.call('RPUSH', mk, ARGV[i]) end
if meta ~= '' then
  redis.call('RPUSH', p .. 'meta:' .. session, meta_record(before, #ARGV - 5, meta, now))
end
redis.call('SADD', p .. 'sessions', session)
return {1, #ARGV - 5}
"""
)

# ARGV: prefix. Events held mid-routing or mid-parallel go back to pending.
RECOVER = (
    _PRELUDE
    + """
local count = 0
for _, session in ipairs(redis.call('SMEMBERS', p .. 'sessions')) do
  for _, id in ipairs(redis.call('ZRANGE', p .. 'open:' .. session, 0, -1)) do
    local status = redis.call('HGET', p .. 'ev:' .. id, 'status')
    if status == 'routing' or status == 'parallel' then
      restatus(id, 'pending')
      count = count + 1
    end
  end
end
return count
"""
)

_READ_EVENTS = f"""
local out = {{}}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', p .. 'ev:' .. id, {_FIELDS_LUA})
  for _, v in ipairs(f) do table.insert(out, v) end
end
return out
"""

# ARGV: prefix, session -> EVENT_FIELDS of each pending event, flat, in seq order.
PENDING = (
    """
local p = ARGV[1]
local ids = redis.call('ZRANGE', p .. 'pending:' .. ARGV[2], 0, -1)
"""
    + _READ_EVENTS
)

# ARGV: prefix, log key suffix ('log' or 'log:<session>'), after_seq, limit (-1: all)
EVENT_LOG = (
    """
local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', p .. ARGV[2], '(' .. ARGV[3], '+inf',
                       'LIMIT', 0, ARGV[4])
"""
    + _READ_EVENTS
)

# ARGV: prefix, log key suffix, before_seq (0: none), limit -> {older, EVENT_FIELDS...}:
# the newest `limit` events below before_seq, newest first, and how many older ones remain.
EVENT_LOG_NEWEST = (
    """
local p = ARGV[1]
local key = p .. ARGV[2]
local top = '+inf'
if tonumber(ARGV[3]) > 0 then top = '(' .. ARGV[3] end
local ids = redis.call('ZREVRANGEBYSCORE', key, top, '-inf', 'LIMIT', 0, ARGV[4])
local older = redis.call('ZCOUNT', key, '-inf', top) - #ids
local rows = (function()
"""
    + _READ_EVENTS
    + """
end)()
table.insert(rows, 1, older)
return rows
"""
)

# ARGV: prefix -> flat {session, count, oldest accepted_at} for sessions with open events
QUEUE_DEPTHS = """
local p = ARGV[1]
local out = {}
for _, session in ipairs(redis.call('SMEMBERS', p .. 'sessions')) do
  local key = p .. 'open:' .. session
  local count = redis.call('ZCARD', key)
  if count > 0 then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    table.insert(out, session)
    table.insert(out, count)
    table.insert(out, oldest[2])
  end
end
return out
"""

# ARGV: prefix, delta, session, token, id... -> {1, the attempts of each id before this
# change (0 for unknown ids)}; never below 0. Fleet: {3, current} when the token is not
# the session's (the ids are that session's events): a daemon that lost the session
# must not count its crashes, nor quarantine (below), after the new owner started.
NOTE_ATTEMPT = (
    _PRELUDE
    + """
local delta = tonumber(ARGV[2])
local current = ARGV[3] ~= '' and fenced(ARGV[3], ARGV[4])  -- '': no such event
if current then return {3, current} end
local out = {1}
for i = 5, #ARGV do
  local ek = p .. 'ev:' .. ARGV[i]
  if redis.call('EXISTS', ek) == 1 then
    local before = tonumber(redis.call('HGET', ek, 'attempts') or '0')
    redis.call('HSET', ek, 'attempts', math.max(before + delta, 0))
    table.insert(out, before)
  else
    table.insert(out, 0)
  end
end
return out
"""
)

# ARGV: prefix, failure, session, token, id... -> {1, the ids moved (those pending or
# consumed)}, or (fleet) {3, current} as NOTE_ATTEMPT.
QUARANTINE = (
    _PRELUDE
    + """
local current = ARGV[3] ~= '' and fenced(ARGV[3], ARGV[4])  -- '': no such event
if current then return {3, current} end
local out = {1}
for i = 5, #ARGV do
  local id = ARGV[i]
  local status = redis.call('HGET', p .. 'ev:' .. id, 'status')
  if status == 'pending' or status == 'consumed' then
    restatus(id, 'quarantined')
    redis.call('HSET', p .. 'ev:' .. id, 'failure', ARGV[2])
    table.insert(out, id)
  end
end
return out
"""
)

# ARGV: prefix, id -> EVENT_FIELDS of the event put back in the queue, or {} if not quarantined.
RETRY = (
    _PRELUDE
    + f"""
local ek = p .. 'ev:' .. ARGV[2]
if redis.call('HGET', ek, 'status') ~= 'quarantined' then return {{}} end
restatus(ARGV[2], 'pending')
redis.call('HSET', ek, 'attempts', 0)
return redis.call('HMGET', ek, {_FIELDS_LUA})
"""
)

QUARANTINED = (
    """
local p = ARGV[1]
local ids = redis.call('ZRANGE', p .. 'quarantined', 0, -1)
"""
    + _READ_EVENTS
)

# ARGV: prefix -> '' when every key the store uses has the type it expects, else
# 'key: found T, expected U' for the first that does not.
CHECK_TYPES = """
local p = ARGV[1]
local function want(key, expected)
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= expected then
    return key .. ': found ' .. found .. ', expected ' .. expected
  end
  return nil
end
local bad = want(p .. 'seq', 'string') or want(p .. 'sessions', 'set')
  or want(p .. 'log', 'zset') or want(p .. 'quarantined', 'zset')
if bad then return bad end
for _, session in ipairs(redis.call('SMEMBERS', p .. 'sessions')) do
  bad = want(p .. 'msgs:' .. session, 'list') or want(p .. 'pending:' .. session, 'zset')
    or want(p .. 'open:' .. session, 'zset') or want(p .. 'log:' .. session, 'zset')
  if bad then return bad end
end
return ''
"""

# ARGV: prefix, token, ttl_ms -> 1 while we hold the lease (renewed), 0 if someone else does.
RENEW_LEASE = """
if redis.call('GET', ARGV[1] .. 'lease') == ARGV[2] then
  redis.call('PEXPIRE', ARGV[1] .. 'lease', ARGV[3])
  return 1
end
return 0
"""

# ARGV: prefix, old value, new value, ttl_ms -> 1 if the lease still held the old value
# (a dead daemon's) and is ours now, else 0.
TAKE_OVER_LEASE = """
if redis.call('GET', ARGV[1] .. 'lease') == ARGV[2] then
  redis.call('SET', ARGV[1] .. 'lease', ARGV[3], 'PX', ARGV[4])
  return 1
end
return 0
"""

# ARGV: prefix, token. Deletes the lease only if it is still ours.
RELEASE_LEASE = """
if redis.call('GET', ARGV[1] .. 'lease') == ARGV[2] then
  return redis.call('DEL', ARGV[1] .. 'lease')
end
return 0
"""

# ARGV: prefix, key, expected is absent (1|0), expected, delete (1|0), value -> 1 if the
# state field held what was expected and now holds the value (or is gone), else 0.
PUT_STATE_IF = """
local name = ARGV[1] .. 'state'
local current = redis.call('HGET', name, ARGV[2])
if ARGV[3] == '1' then
  if current then return 0 end
elseif current ~= ARGV[4] then
  return 0
end
if ARGV[5] == '1' then
  redis.call('HDEL', name, ARGV[2])
else
  redis.call('HSET', name, ARGV[2], ARGV[6])
end
return 1
"""

SCRIPTS = {
    "APPEND": APPEND,
    "SET_ROUTE": SET_ROUTE,
    "SET_PARALLEL_ANSWER": SET_PARALLEL_ANSWER,
    "CONSUME": CONSUME,
    "APPEND_MESSAGES": APPEND_MESSAGES,
    "RECOVER": RECOVER,
    "PENDING": PENDING,
    "EVENT_LOG": EVENT_LOG,
    "EVENT_LOG_NEWEST": EVENT_LOG_NEWEST,
    "QUEUE_DEPTHS": QUEUE_DEPTHS,
    "NOTE_ATTEMPT": NOTE_ATTEMPT,
    "QUARANTINE": QUARANTINE,
    "RETRY": RETRY,
    "QUARANTINED": QUARANTINED,
    "CHECK_TYPES": CHECK_TYPES,
    "RENEW_LEASE": RENEW_LEASE,
    "RELEASE_LEASE": RELEASE_LEASE,
    "TAKE_OVER_LEASE": TAKE_OVER_LEASE,
    "PUT_STATE_IF": PUT_STATE_IF,
}
