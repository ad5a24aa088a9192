"""The Lua scripts of the fleet: several daemons sharing one Redis key prefix.

Each script is one atomic step of :class:`~wakeful.store.fleet.sessions.RedisFleet`.
The event scripts (:mod:`~wakeful.store.redis_scripts`) keep each not-yet-consumed
event's one live entry in ``P events``; these scripts decide who handles it.

Keys, under the prefix ``P`` (``ARGV[1]``), beside the store's own::

    P fleet:on             string: this prefix is shared by a fleet
    P events               stream (group "fleet"): one entry {id, session} per open event
    P dead                 stream: entries delivered max_deliveries times, with the reason
    P ctl:<daemon>         stream (group "fleet"): {op: wake|cancel, session, ...} for its owner
    P owner:<session>      string, PX lease: the daemon that drives the session
    P fence:<session>      INCR counter: the session's fencing token, one more per new owner
    P fleet:daemons        hash daemon -> JSON (pid, host, url, started)
    P fleet:alive:<daemon> string, PX: the daemon's heartbeat
    P fleet:owned:<daemon> set: the sessions it holds
    P fleet:claimed        hash session -> its last owner (every session ever owned)

An owner's lease and its fencing token are taken together (:func:`take`), so a
write carrying an older token is refused once a new owner exists, however long
the old one was paused. Entries are delivered to any daemon (XREADGROUP); one
that reaches a daemon that does not own its session is moved (XCLAIM ... JUSTID,
which leaves its delivery count alone) to the owner's pending list, and the owner
is woken on its control stream. A live daemon resets the idle time of what it holds
at each heartbeat, so only a dead or stalled daemon's entries go idle long enough
for XAUTOCLAIM (``claim_idle_ms``); each such claim counts one delivery.
"""

from __future__ import annotations

from wakeful.store.redis_scripts import _PRELUDE

# Shared by the routing scripts (after _PRELUDE, which sets p and restatus).
_OWNERSHIP = """
local function take(session, me, ttl)
  redis.call('SET', p .. 'owner:' .. session, me, 'PX', ttl)
  local token = redis.call('INCR', p .. 'fence:' .. session)
  redis.call('SADD', p .. 'fleet:owned:' .. me, session)
  redis.call('HSET', p .. 'fleet:claimed', session, me)
  return token
end

-- One delivered entry: {entry, session, outcome, detail}; outcome is 'mine' (wake the
-- loop), 'taken' (detail: the new fencing token; start the loop), 'forwarded' (detail:
-- the owner it was moved to) or 'stale' (its event is no longer open: acknowledged).
local woken = {}  -- owner .. session: woken once per script call, however many entries

local function route(entry, id, session, me, ttl)
  if id == nil or redis.call('HGET', p .. 'ev:' .. id, 'entry') ~= entry then
    redis.call('XACK', p .. 'events', 'fleet', entry)
    return {entry, session or '', 'stale', ''}
  end
  local owner = redis.call('GET', p .. 'owner:' .. session)
  if owner == me then return {entry, session, 'mine', ''} end
  if not owner then return {entry, session, 'taken', tostring(take(session, me, ttl))} end
  redis.call('XCLAIM', p .. 'events', 'fleet', owner, 0, entry, 'JUSTID')
  if not woken[owner .. ' ' .. session] then
    woken[owner .. ' ' .. session] = true
    redis.call('XADD', p .. 'ctl:' .. owner, 'MAXLEN', '~', 10000, '*', 'op', 'wake',
               'session', session)
  end
  return {entry, session, 'forwarded', owner}
end

local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end
"""

# ARGV: prefix, single-daemon lease key's name. At open: the prefix is a fleet's from now
# on, and the events stream has its group (from 0: entries added before any daemon read
# count). -> 1, or 0 if a single daemon holds the prefix (it would not use the streams).
ENABLE = """
local p = ARGV[1]
if redis.call('EXISTS', p .. 'lease') == 1 then return 0 end
redis.call('SET', p .. 'fleet:on', '1')
pcall(redis.call, 'XGROUP', 'CREATE', p .. 'events', 'fleet', '0', 'MKSTREAM')
return 1
"""

# ARGV: prefix, me, info JSON, ttl_ms. A daemon joins: its registry row, its heartbeat,
# its control stream.
JOIN = """
local p, me = ARGV[1], ARGV[2]
redis.call('HSET', p .. 'fleet:daemons', me, ARGV[3])
redis.call('SET', p .. 'fleet:alive:' .. me, '1', 'PX', ARGV[4])
pcall(redis.call, 'XGROUP', 'CREATE', p .. 'ctl:' .. me, 'fleet', '0', 'MKSTREAM')
return 1
"""

# ARGV: prefix, me, ttl_ms, then (entry, event id, session) triples -> a route() row each.
ROUTE = (
    _PRELUDE
    + _OWNERSHIP
    + """
local me, ttl = ARGV[2], ARGV[3]
local out = {}
for i = 4, #ARGV, 3 do
  table.insert(out, route(ARGV[i], ARGV[i + 1], ARGV[i + 2], me, ttl))
end
return out
"""
)

# ARGV: prefix, me, ttl_ms, min_idle_ms, max_deliveries, now -> route() rows for the
# entries claimed from stalled or dead daemons, and {entry, session, 'dead', reason} for
# those past max_deliveries (now in P dead, acknowledged, their event quarantined).
CLAIM_STALE = (
    _PRELUDE
    + _OWNERSHIP
    + """
local me, ttl, idle, most, now = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local key = p .. 'events'
local claimed = redis.call('XAUTOCLAIM', key, 'fleet', me, idle, '0-0', 'COUNT', 100)
local out = {}
for _, item in ipairs(claimed[2]) do
  local entry, fields = item[1], item[2]
  local id, session = field(fields, 'id'), field(fields, 'session')
  local info = redis.call('XPENDING', key, 'fleet', entry, entry, 1)[1]
  local deliveries = info and tonumber(info[4]) or 0
  if deliveries > most and id and redis.call('HGET', p .. 'ev:' .. id, 'entry') == entry then
    local reason = 'delivered ' .. deliveries .. ' times without being consumed (each'
      .. ' daemon holding it died or stalled); last claimed by ' .. me
    redis.call('XADD', p .. 'dead', 'MAXLEN', '~', 10000, '*', 'id', id, 'session', session,
               'entry', entry, 'deliveries', deliveries, 'reason', reason, 'at', now)
    restatus(id, 'quarantined')  -- acknowledges the entry
    redis.call('HSET', p .. 'ev:' .. id, 'failure', reason)
    table.insert(out, {entry, session, 'dead', reason})
  else
    table.insert(out, route(entry, id, session, me, ttl))
  end
end
return out
"""
)

# ARGV: prefix, me, ttl_ms, info JSON, refresh_idle_ms, then (session, token) pairs: the
# heartbeat. Renews the daemon's registration and each lease it holds; a lapsed lease is
# taken back if no one took it since (the token is still current). -> the sessions it no
# longer owns.
RENEW = """
local p, me, ttl = ARGV[1], ARGV[2], ARGV[3]
redis.call('SET', p .. 'fleet:alive:' .. me, '1', 'PX', ttl)
redis.call('HSET', p .. 'fleet:daemons', me, ARGV[4])
local lost = {}
for i = 6, #ARGV, 2 do
  local session, token = ARGV[i], ARGV[i + 1]
  local key = p .. 'owner:' .. session
  local owner = redis.call('GET', key)
  if owner == me then
    redis.call('PEXPIRE', key, ttl)
  elseif not owner and redis.call('GET', p .. 'fence:' .. session) == token then
    redis.call('SET', key, me, 'PX', ttl)
  else
    redis.call('SREM', p .. 'fleet:owned:' .. me, session)
    table.insert(lost, session)
  end
end
-- What this daemon holds stays fresh: only a dead or stalled daemon's entries go idle.
-- (Only those idle for a quarter of the claim time: a long queue costs little.)
local mine = redis.call('XPENDING', p .. 'events', 'fleet', 'IDLE', ARGV[5], '-', '+', 1000, me)
if #mine > 0 then
  local claim = {'XCLAIM', p .. 'events', 'fleet', me, 0}
  for _, row in ipairs(mine) do table.insert(claim, row[1]) end
  table.insert(claim, 'JUSTID')  -- resets the idle time without counting a delivery
  redis.call(unpack(claim))
end
return lost
"""

# ARGV: prefix, me, ttl_ms -> {session, token} flat: orphans this daemon took. An orphan is
# a session once owned whose lease lapsed (its daemon died, handed it over or gave it up); each live
# daemon takes them up to its fair share, so the sessions spread. Dead daemons' registry
# rows, control streams and (empty) consumers are removed on the way.
ADOPT = (
    _PRELUDE
    + _OWNERSHIP
    + """
local me, ttl = ARGV[2], ARGV[3]
local live = 0
for _, daemon in ipairs(redis.call('HKEYS', p .. 'fleet:daemons')) do
  if daemon == me or redis.call('EXISTS', p .. 'fleet:alive:' .. daemon) == 1 then
    live = live + 1
  else
    redis.call('HDEL', p .. 'fleet:daemons', daemon)
    redis.call('DEL', p .. 'fleet:owned:' .. daemon, p .. 'ctl:' .. daemon)
    if #redis.call('XPENDING', p .. 'events', 'fleet', '-', '+', 1, daemon) == 0 then
      redis.call('XGROUP', 'DELCONSUMER', p .. 'events', 'fleet', daemon)
    end
  end
end
local sessions = redis.call('HKEYS', p .. 'fleet:claimed')
local fair = math.ceil(#sessions / live)
local mine = redis.call('SCARD', p .. 'fleet:owned:' .. me)
local out = {}
for _, session in ipairs(sessions) do
  if mine >= fair then break end
  if redis.call('EXISTS', p .. 'owner:' .. session) == 0 then
    table.insert(out, session)
    table.insert(out, take(session, me, ttl))
    mine = mine + 1
  end
end
return out
"""
)

# ARGV: prefix, me -> how many entries were handed over. The daemon is stopping at a safe
# point: its leases end now rather than at expiry, and each entry it holds goes back into
# the stream as a new one (the old acknowledged), for the live daemons to take at once.
HAND_OVER = """
local p, me = ARGV[1], ARGV[2]
local key = p .. 'events'
for _, session in ipairs(redis.call('SMEMBERS', p .. 'fleet:owned:' .. me)) do
  if redis.call('GET', p .. 'owner:' .. session) == me then
    redis.call('DEL', p .. 'owner:' .. session)
  end
end
redis.call('DEL', p .. 'fleet:owned:' .. me)
local moved = 0
local held = redis.call('XPENDING', key, 'fleet', '-', '+', 10000, me)
for _, row in ipairs(held) do
  local entry = row[1]
  local found = redis.call('XRANGE', key, entry, entry)[1]
  redis.call('XACK', key, 'fleet', entry)
  if found then
    local fields = found[2]
    local id, session
    for i = 1, #fields, 2 do
      if fields[i] == 'id' then id = fields[i + 1] end
      if fields[i] == 'session' then session = fields[i + 1] end
    end
    if id and redis.call('HGET', p .. 'ev:' .. id, 'entry') == entry then
      local new = redis.call('XADD', key, '*', 'id', id, 'session', session)
      redis.call('HSET', p .. 'ev:' .. id, 'entry', new)
      moved = moved + 1
    end
  end
end
redis.call('XGROUP', 'DELCONSUMER', key, 'fleet', me)
redis.call('DEL', p .. 'fleet:alive:' .. me, p .. 'ctl:' .. me)
redis.call('HDEL', p .. 'fleet:daemons', me)
return moved
"""

# ARGV: prefix, me, mine -> {mine, fair, fewest}: the sessions this daemon owns (its own
# count of its tokens: a session whose give-up failed half way stays in its owned set),
# its fair share (every session ever owned over the live daemons, rounded up, as ADOPT
# counts it) and the fewest any other live daemon owns (-1 if none is live). Reads only:
# the daemon decides whether to give one up (RedisFleet.over_share), since only it
# knows which of its sessions is idle.
SHARE = """
local p, me = ARGV[1], ARGV[2]
local live, fewest = 1, -1
for _, daemon in ipairs(redis.call('HKEYS', p .. 'fleet:daemons')) do
  if daemon ~= me and redis.call('EXISTS', p .. 'fleet:alive:' .. daemon) == 1 then
    live = live + 1
    local owned = redis.call('SCARD', p .. 'fleet:owned:' .. daemon)
    if fewest < 0 or owned < fewest then fewest = owned end
  end
end
local mine = tonumber(ARGV[3])
return {mine, math.ceil(redis.call('HLEN', p .. 'fleet:claimed') / live), fewest}
"""

# ARGV: prefix, me, session -> how many entries were put back. HAND_OVER for one session
# (the daemon holds more than its share and the session is idle): its lease ends if it is
# still this daemon's, and the entries of that session it holds go back into the stream as
# new ones; nothing else changes (no fencing token is bumped: the next owner's take does
# it). A daemon below its share adopts the orphan (ADOPT).
GIVE_UP = """
local p, me, session = ARGV[1], ARGV[2], ARGV[3]
local key = p .. 'events'
if redis.call('GET', p .. 'owner:' .. session) == me then
  redis.call('DEL', p .. 'owner:' .. session)
end
redis.call('SREM', p .. 'fleet:owned:' .. me, session)
local moved = 0
for _, row in ipairs(redis.call('XPENDING', key, 'fleet', '-', '+', 10000, me)) do
  local entry = row[1]
  local found = redis.call('XRANGE', key, entry, entry)[1]
  local id, of
  if found then
    local fields = found[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'id' then id = fields[i + 1] end
      if fields[i] == 'session' then of = fields[i + 1] end
    end
  end
  if of == session then
    redis.call('XACK', key, 'fleet', entry)
    if id and redis.call('HGET', p .. 'ev:' .. id, 'entry') == entry then
      local new = redis.call('XADD', key, '*', 'id', id, 'session', session)
      redis.call('HSET', p .. 'ev:' .. id, 'entry', new)
      moved = moved + 1
    end
  end
end
return moved
"""

# ARGV: prefix, session, op, cause, stop_tools[, the event asking] -> the owner told, or
# false if none.
TELL_OWNER = """
local p = ARGV[1]
local owner = redis.call('GET', p .. 'owner:' .. ARGV[2])
if not owner then return false end
redis.call('XADD', p .. 'ctl:' .. owner, 'MAXLEN', '~', 10000, '*', 'op', ARGV[3],
           'session', ARGV[2], 'cause', ARGV[4], 'stop_tools', ARGV[5], 'event', ARGV[6] or '')
return owner
"""

# ARGV: prefix. Trims the events stream below its oldest unacknowledged entry: the oldest
# pending one, else the group's last delivered (everything after it is undelivered).
TRIM = """
local p = ARGV[1]
local key = p .. 'events'
local summary = redis.call('XPENDING', key, 'fleet')
local keep = summary[2]
if not keep then
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    local name, last
    for i = 1, #group, 2 do
      if group[i] == 'name' then name = group[i + 1] end
      if group[i] == 'last-delivered-id' then last = group[i + 1] end
    end
    if name == 'fleet' then keep = last end
  end
end
if not keep then return 0 end
return redis.call('XTRIM', key, 'MINID', keep)
"""

# ARGV: prefix, dead entries to list -> JSON: daemons (alive, info, sessions, pending
# entries), the group's lag and pending count, dead-lettered entries (count, newest).
STATUS = """
local p = ARGV[1]
local key = p .. 'events'
local out = {daemons = {}, dead = {count = 0, newest = {}}}
local per = {}
if redis.call('EXISTS', key) == 1 then
  for _, row in ipairs(redis.call('XPENDING', key, 'fleet')[4] or {}) do
    per[row[1]] = tonumber(row[2])
  end
  for _, group in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    for i = 1, #group, 2 do
      if group[i] == 'pending' then out.pending = group[i + 1] end
      if group[i] == 'lag' then out.lag = group[i + 1] end
    end
  end
  out.entries = redis.call('XLEN', key)
end
for _, daemon in ipairs(redis.call('HKEYS', p .. 'fleet:daemons')) do
  out.daemons[daemon] = {
    alive = redis.call('EXISTS', p .. 'fleet:alive:' .. daemon) == 1,
    info = redis.call('HGET', p .. 'fleet:daemons', daemon),
    sessions = redis.call('SMEMBERS', p .. 'fleet:owned:' .. daemon),
    pending = per[daemon] or 0,
  }
end
if redis.call('EXISTS', p .. 'dead') == 1 then
  out.dead.count = redis.call('XLEN', p .. 'dead')
  for _, item in ipairs(redis.call('XREVRANGE', p .. 'dead', '+', '-', 'COUNT', ARGV[2])) do
    local row = {entry = item[1]}
    for i = 1, #item[2], 2 do row[item[2][i]] = item[2][i + 1] end
    table.insert(out.dead.newest, row)
  end
end
return cjson.encode(out)
"""

SCRIPTS = {
    "FLEET_ENABLE": ENABLE,
    "FLEET_JOIN": JOIN,
    "FLEET_ROUTE": ROUTE,
    "FLEET_CLAIM_STALE": CLAIM_STALE,
    "FLEET_RENEW": RENEW,
    "FLEET_ADOPT": ADOPT,
    "FLEET_HAND_OVER": HAND_OVER,
    "FLEET_SHARE": SHARE,
    "FLEET_GIVE_UP": GIVE_UP,
    "FLEET_TELL_OWNER": TELL_OWNER,
    "FLEET_TRIM": TRIM,
    "FLEET_STATUS": STATUS,
}
