import { createHash } from 'node:crypto';

/**
 * Lua: `greater(a, b)`, true when text `a` sorts after `b` in byte order, as branded ids'
 * fixed-width text sorts (the newest-id record's compare-and-set, here and in the exactly-once
 * commit).
 */
export const LUA_GREATER = `local function greater(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
`;

/**
 * XACK and the skip records of the acked entries in one atomic script call (docs/delivery.md
 * "Duplicates and stale replays"): a record is only ever written with its entry's XACK, so only
 * handled entries count. The records go first: Redis does not roll a script back, and a write
 * refused half-way (`maxmemory` with `noeviction` refuses SET, not XACK; an ACL without `+set`)
 * must leave the entries pending, to be acked with their records once Redis takes them, never
 * acked without them (later copies would run again). A record written without its XACK only
 * lets the redelivery of a handled entry be skipped.
 *
 * - `set` (dedup): `SET key value PX ttl`, the branded id acked by the group;
 * - `max` (newer-wins): a compare-and-set, `value` written only when the key holds nothing or a
 *   smaller value (byte order, as the branded ids' fixed-width text sorts), `PX ttl` renewed then.
 *
 * KEYS[1] the stream; then the key of each record written. ARGV[1] the group,
 * ARGV[2] how many entry ids, then the entry ids, then how many runs of records, then each run:
 * mode (`set` | `max`), ttl in ms, how many records, then for `max` their values (one argument
 * per record), for `set` the byte length of the keys' head (a `dedup` record's value is its key's
 * tail, the branded id the key names: not sent twice). Returns how many entries XACK
 * acknowledged.
 */
export const ACK_RECORDS_SCRIPT = `
${LUA_GREATER}local count = tonumber(ARGV[2])
local runs = tonumber(ARGV[3 + count])
local at = 4 + count
local key = 2
for _ = 1, runs do
  local mode, ttl, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  at = at + 3
  if mode == 'max' then
    for i = at, at + n - 1 do
      local current = redis.call('GET', KEYS[key])
      if (not current) or greater(ARGV[i], current) then
        redis.call('SET', KEYS[key], ARGV[i], 'PX', ttl)
      end
      key = key + 1
    end
    at = at + n
  else
    local from = tonumber(ARGV[at]) + 1
    for _ = 1, n do
      redis.call('SET', KEYS[key], string.sub(KEYS[key], from), 'PX', ttl)
      key = key + 1
    end
    at = at + 1
  end
end
local acked = 0
for first = 3, 2 + count, 1000 do
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, first, math.min(first + 999, 2 + count)))
end
return acked
`;

/** SHA1 of {@link ACK_RECORDS_SCRIPT}, for EVALSHA. */
export const ACK_RECORDS_SHA = createHash('sha1').update(ACK_RECORDS_SCRIPT).digest('hex');
