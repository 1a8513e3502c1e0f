import { createHash } from 'node:crypto';
import { keyInSlotOf } from './slot-keys';

/**
 * XACK and the skip records of the acked entries in one atomic script call (docs/delivery.md
 * "Duplicates and stale replays"): a record is only ever written with its entry's XACK, so only
 * acked entries count.
 *
 * - `set` (dedup): `SET key value PX ttl`, the branded id acked by the group;
 * - `max` (newer-wins): a compare-and-set, `value` written only when the key holds nothing or a
 *   smaller value (byte order, as the branded ids' fixed-width text sorts), `PX ttl` renewed then.
 *
 * KEYS[1] the stream; KEYS[1 + i] the key of record i. ARGV[1] the group, ARGV[2] how many entry
 * ids, then the entry ids, then per record: mode (`set` | `max`), value, ttl in ms. Returns how
 * many entries XACK acknowledged.
 */
export const ACK_RECORDS_SCRIPT = `
local function greater(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
local count = tonumber(ARGV[2])
local acked = 0
for first = 3, 2 + count, 1000 do
  acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, first, math.min(first + 999, 2 + count)))
end
local at = 3 + count
for i = 2, #KEYS do
  local mode, value, ttl = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  if mode == 'max' then
    local current = redis.call('GET', KEYS[i])
    if (not current) or greater(value, current) then
      redis.call('SET', KEYS[i], value, 'PX', ttl)
    end
  else
    redis.call('SET', KEYS[i], value, 'PX', ttl)
  end
  at = at + 3
end
return acked
`;

/** SHA1 of {@link ACK_RECORDS_SCRIPT}, for EVALSHA. */
export const ACK_RECORDS_SHA = createHash('sha1').update(ACK_RECORDS_SCRIPT).digest('hex');

/** The record of branded id `id` acked by `group` on `stream` (dedup). */
export function ackedIdKey(stream: string, group: string, id: string): string {
  return keyInSlotOf(stream, 'echo-dedup', group, id);
}

/** The record of the newest branded id `group` acked for entity `key` on `stream` (newer-wins). */
export function newestIdKey(stream: string, group: string, key: string): string {
  return keyInSlotOf(stream, 'echo-newest', group, key);
}
