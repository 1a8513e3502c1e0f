import { createHash } from 'node:crypto';
import { LUA_GREATER } from './skip-records.script';

/** The largest increment and counter an exactly-once INCRBY takes: exact in Lua's numbers. */
export const COMMIT_COUNTER_LIMIT = 1e15;

/**
 * The commit of exactly-once entries (docs/ARCHITECTURE.md "Exactly-once commits"): each entry's
 * writes and its XACK in one atomic script call, fenced, so that a handler's Redis writes happen
 * once or not at all.
 *
 * - **Fenced.** Before an entry's writes, XPENDING must show it pending with this consumer and the
 *   delivery count its handler saw: a reclaim by a peer (XCLAIM, XAUTOCLAIM) and a new partition
 *   owner's claim move the owner, a read of it again the count. An entry that fails the check
 *   writes nothing (its new owner commits it) and is not acked. One XPENDING of this consumer's
 *   rows from the lowest to the highest id of the call answers for most entries (an XPENDING per
 *   entry cost ~1.5 µs of the server's CPU per entry, a tenth of the call); an entry not among its
 *   rows (another consumer's, acked, or past the rows it returned) is asked alone.
 * - **All or nothing.** Redis does not roll a script back, so an entry's writes are checked before
 *   the first of them runs: HSET needs a hash or no key, XADD a stream or no key, INCRBY an integer
 *   text of at most 15 digits (exact in Lua's numbers) or no key, as the entry's earlier writes
 *   leave them. An entry that fails the check writes nothing and is not acked (its handler's
 *   error, retried and dead-lettered as any). The shebang without `allow-oom` makes Redis refuse
 *   the whole call at `maxmemory` before it writes anything.
 * - **Once per branded id.** `seen` is the `dedup` record: when its key exists, an entry of the
 *   same branded id committed before (a copy another consumer handled at the same time, before
 *   either's look-up could see the other's record): the entry writes nothing and is acked, its
 *   verdict `duplicate`.
 * - Entries commit in the order given, each seeing the writes of the ones before it.
 * - `max` is the `newerWins` record's compare-and-set: `value` (with its PX) written only when the
 *   key holds nothing or a smaller value (byte order, as branded ids sort), as the skip records'
 *   script does with an XACK.
 *
 * KEYS[1] the source stream, then every key written (an operation names its key by index).
 * ARGV[1] the group, ARGV[2] the consumer, ARGV[3] how many entries, ARGV[4] and ARGV[5] the
 * lowest and the highest of their ids (stream order); then per entry its id, the
 * delivery count its handler saw, how many operations, then each operation: its name (`xadd`,
 * `set`, `seen`, `max`, `incrby`, `hset`, `del`), its key's index in KEYS, how many arguments, the
 * arguments (`xadd`: field, value, ...; `set`, `seen` and `max`: value and PX ms, `0` for none;
 * `incrby`: the increment; `hset`: field, value; `del`: none). Returns per entry `ok`,
 * `duplicate`, `fenced:<why>` or `invalid:<why>`.
 */
export const ENTRY_COMMIT_SCRIPT = `#!lua
local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local LIMIT = ${COMMIT_COUNTER_LIMIT}

local function integerText(text)
  if text == '0' then return true end
  return string.match(text, '^%-?[1-9]%d*$') ~= nil
end

-- the type and (for strings) value a key has after the writes of this entry so far
local function stateOf(overlay, key)
  local known = overlay[key]
  if known then return known end
  local kind = redis.call('TYPE', key)['ok']
  local state = { kind = kind }
  overlay[key] = state
  return state
end

-- why the operations from ARGV[at] cannot all run (nil: they can), and whether the entry is a
-- duplicate (its dedup record is there)
local function check(at, count)
  local overlay = {}
  for _ = 1, count do
    local op, key, n = ARGV[at], KEYS[tonumber(ARGV[at + 1])], tonumber(ARGV[at + 2])
    local first = at + 3
    if op == 'xadd' or op == 'hset' then
      local kind = op == 'xadd' and 'stream' or 'hash'
      local state = stateOf(overlay, key)
      if state.kind ~= 'none' and state.kind ~= kind then
        return string.upper(op) .. ' on ' .. key .. ', which holds a ' .. state.kind
      end
      overlay[key] = { kind = kind }
    elseif op == 'incrby' then
      local state = stateOf(overlay, key)
      local value = 0
      if state.kind == 'string' then
        local text = state.value or redis.call('GET', key)
        if not integerText(text) or math.abs(tonumber(text)) > LIMIT then
          return 'INCRBY on ' .. key .. ', whose value is not an integer of at most 15 digits'
        end
        value = tonumber(text)
      elseif state.kind ~= 'none' then
        return 'INCRBY on ' .. key .. ', which holds a ' .. state.kind
      end
      value = value + tonumber(ARGV[first])
      if math.abs(value) > LIMIT then
        return 'INCRBY on ' .. key .. ' would pass 15 digits'
      end
      overlay[key] = { kind = 'string', value = string.format('%d', value) }
    elseif op == 'set' then
      overlay[key] = { kind = 'string', value = ARGV[first] }
    elseif op == 'seen' then
      if stateOf(overlay, key).kind ~= 'none' then return nil, true end
      overlay[key] = { kind = 'string', value = ARGV[first] }
    elseif op == 'max' then
      local state = stateOf(overlay, key)
      if state.kind ~= 'none' and state.kind ~= 'string' then
        return 'a newest-id record on ' .. key .. ', which holds a ' .. state.kind
      end
      -- its value after the write is not needed: no later check reads a record's value
      overlay[key] = { kind = 'string' }
    elseif op == 'del' then
      overlay[key] = { kind = 'none' }
    else
      return 'unknown operation ' .. tostring(op)
    end
    at = first + n
  end
  return nil
end

${LUA_GREATER}
local function apply(at, count)
  for _ = 1, count do
    local op, key, n = ARGV[at], KEYS[tonumber(ARGV[at + 1])], tonumber(ARGV[at + 2])
    local first = at + 3
    if op == 'xadd' then
      redis.call('XADD', key, '*', unpack(ARGV, first, first + n - 1))
    elseif op == 'set' or op == 'seen' or op == 'max' then
      local current = op == 'max' and redis.call('GET', key)
      if not current or greater(ARGV[first], current) then
        if ARGV[first + 1] == '0' then redis.call('SET', key, ARGV[first])
        else redis.call('SET', key, ARGV[first], 'PX', ARGV[first + 1]) end
      end
    elseif op == 'incrby' then
      redis.call('INCRBY', key, ARGV[first])
    elseif op == 'hset' then
      redis.call('HSET', key, ARGV[first], ARGV[first + 1])
    else
      redis.call('DEL', key)
    end
    at = first + n
  end
end

-- where the operations after those of the entry at ARGV[at] begin
local function skip(at, count)
  for _ = 1, count do at = at + 3 + tonumber(ARGV[at + 2]) end
  return at
end

-- this consumer's pending rows of the call's id range, by id (twice the entries: rows of its
-- other entries in hand may lie between them; an entry past the rows returned is asked alone)
local entries = tonumber(ARGV[3])
local mine = {}
for _, row in ipairs(redis.call('XPENDING', stream, group, ARGV[4], ARGV[5], 2 * entries, consumer)) do
  mine[row[1]] = row
end

local verdicts = {}
local acked = {}
local at = 6
for e = 1, entries do
  local id, deliveries, count = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local ops = at + 3
  at = skip(ops, count)
  local row = mine[id] or redis.call('XPENDING', stream, group, id, id, 1)[1]
  if not row then
    verdicts[e] = 'fenced:not pending'
  elseif row[2] ~= consumer then
    verdicts[e] = 'fenced:owned by ' .. row[2]
  elseif tonumber(row[4]) ~= deliveries then
    verdicts[e] = 'fenced:delivered ' .. row[4] .. ' times'
  else
    local why, duplicate = check(ops, count)
    if why then
      verdicts[e] = 'invalid:' .. why
    elseif duplicate then
      acked[#acked + 1] = id
      verdicts[e] = 'duplicate'
    else
      apply(ops, count)
      acked[#acked + 1] = id
      verdicts[e] = 'ok'
    end
  end
end
for first = 1, #acked, 1000 do
  redis.call('XACK', stream, group, unpack(acked, first, math.min(first + 999, #acked)))
end
return verdicts
`;

/** SHA1 of {@link ENTRY_COMMIT_SCRIPT}, for EVALSHA. */
export const ENTRY_COMMIT_SHA = createHash('sha1').update(ENTRY_COMMIT_SCRIPT).digest('hex');
