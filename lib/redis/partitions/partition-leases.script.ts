import { createHash } from 'node:crypto';

/**
 * The lease scripts of partitioned streams (docs/partitions.md "Leases"). One hash per stream and
 * group holds, per partition `i`, its owner (`o:i`, '' when free), when its lease ends on the
 * server's clock (`e:i`, ms) and its generation (`g:i`, +1 on every take-over); one sorted set
 * holds the live members of the group (score: when their membership ends). Both sit in the hash
 * slot of the stream's name, so every script names keys of one slot. Times come from `TIME`: one
 * clock for every process.
 */

/** The server's clock in ms, and the fields of partition `i` (shared head of the scripts). */
const HEAD = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function lease(i)
  local f = redis.call('HMGET', KEYS[1], 'o:' .. i, 'e:' .. i, 'g:' .. i)
  return f[1] or '', tonumber(f[2] or '0') or 0, tonumber(f[3] or '0') or 0
end
`;

/**
 * Heartbeat of a member: renews its membership and the leases it holds of the partitions in
 * ARGV[4..] (compare-and-set: a lease taken over meanwhile stays with its new owner), drops
 * members whose membership ended, and answers the live members (sorted by name) and, per
 * partition, its owner ('' when free or expired) and generation. A fixed number of commands
 * whatever the partition count (one HMGET of every lease, one HSET of every renewal), so a
 * parked process's commands per second do not grow with its partitions (docs/partitions.md
 * "Idle cost").
 *
 * KEYS[1] leases hash, KEYS[2] members set; ARGV member, leaseMs, count, partition...
 */
export const LEASE_HEARTBEAT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local member, ms, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], now + ms, member)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('PEXPIRE', KEYS[2], ms * 10)
local fields = {}
for i = 0, count - 1 do
  fields[#fields + 1] = 'o:' .. i
  fields[#fields + 1] = 'e:' .. i
  fields[#fields + 1] = 'g:' .. i
end
local f = redis.call('HMGET', KEYS[1], unpack(fields))
local function at(i, k) return f[3 * i + k] end
local ends = {}
for i = 0, count - 1 do ends[i] = tonumber(at(i, 2) or '0') or 0 end
local renew = {}
for a = 4, #ARGV do
  local i = tonumber(ARGV[a])
  if i ~= nil and i >= 0 and i < count and (at(i, 1) or '') == member then
    ends[i] = now + ms
    renew[#renew + 1] = 'e:' .. i
    renew[#renew + 1] = ends[i]
  end
end
if #renew > 0 then redis.call('HSET', KEYS[1], unpack(renew)) end
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
table.sort(members)
local owners = {}
for i = 0, count - 1 do
  local o = at(i, 1) or ''
  if ends[i] <= now then o = '' end
  owners[#owners + 1] = o
  owners[#owners + 1] = tonumber(at(i, 3) or '0') or 0
end
return { members, owners }
`;

/**
 * Takes the leases of the partitions in ARGV[3..] that are free, expired or recorded for this
 * member (a take-over, by a new run of it too: the generation grows by 1). Answers one
 * generation per partition asked, 0 where another member holds a live lease.
 *
 * KEYS[1] leases hash; ARGV member, leaseMs, partition...
 */
export const LEASE_ACQUIRE_SCRIPT = `${HEAD}
local member, ms = ARGV[1], tonumber(ARGV[2])
local out = {}
for a = 3, #ARGV do
  local i = ARGV[a]
  local o, e, g = lease(i)
  if o == '' or o == member or e <= now then
    g = g + 1
    redis.call('HSET', KEYS[1], 'o:' .. i, member, 'e:' .. i, now + ms, 'g:' .. i, g)
    out[#out + 1] = g
  else
    out[#out + 1] = 0
  end
end
return out
`;

/**
 * Frees the leases of the partitions in ARGV[3..] that the member holds (compare-and-set: a lease
 * taken over meanwhile stays with its new owner); with ARGV[2] = '1' the member also leaves the
 * group's members. Answers how many leases it freed.
 *
 * KEYS[1] leases hash, KEYS[2] members set; ARGV member, leave, partition...
 */
export const LEASE_RELEASE_SCRIPT = `${HEAD}
local member = ARGV[1]
local freed = 0
for a = 3, #ARGV do
  local i = ARGV[a]
  local o = lease(i)
  if o == member then
    redis.call('HSET', KEYS[1], 'o:' .. i, '', 'e:' .. i, 0)
    freed = freed + 1
  end
end
if ARGV[2] == '1' then redis.call('ZREM', KEYS[2], member) end
return freed
`;

/** SHA1 of a script, for EVALSHA. */
export function scriptSha(script: string): string {
  return createHash('sha1').update(script).digest('hex');
}
