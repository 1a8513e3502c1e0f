import { createHash } from 'node:crypto';

/**
 * The pending probe of a partitioned handler (docs/partitions.md "Idle cost"): for each stream in
 * KEYS (all of one hash slot), the size of the group's PEL (XPENDING summary) and, when it holds
 * entries, whether one of them is idle at least ARGV[2] ms (XPENDING IDLE ... COUNT 1, Redis >=
 * 6.2): the two things a loop's sweep starts with. A stream whose PEL cannot be read (no such key
 * or group) answers -1, so its loop sweeps for itself and meets the error there.
 *
 * KEYS stream...; ARGV group, minIdleMs. Answers a flat list: pending, idle (0/1), per stream.
 */
export const PENDING_PROBE_SCRIPT = `
local out = {}
for i = 1, #KEYS do
  local summary = redis.pcall('XPENDING', KEYS[i], ARGV[1])
  if type(summary) == 'table' and summary.err == nil then
    local pending = tonumber(summary[1]) or 0
    local idle = 0
    if pending > 0 then
      local rows = redis.call('XPENDING', KEYS[i], ARGV[1], 'IDLE', ARGV[2], '-', '+', 1)
      if #rows > 0 then idle = 1 end
    end
    out[#out + 1] = pending
    out[#out + 1] = idle
  else
    out[#out + 1] = -1
    out[#out + 1] = 0
  end
end
return out
`;

/** SHA1 of {@link PENDING_PROBE_SCRIPT}, for EVALSHA. */
export const PENDING_PROBE_SHA = createHash('sha1').update(PENDING_PROBE_SCRIPT).digest('hex');

/**
 * A claim of entries this consumer holds that never takes one from a peer (docs/delivery.md "A
 * consumer that froze"): XCLAIM with a min idle time of 0 moves an entry whoever holds it, so a
 * consumer that froze past `minIdleMs` and woke would take back, with its heartbeat, its due
 * retries or its release at stop, the entries a peer took over meanwhile, and both would run (and
 * dead-letter) them. Here each id is claimed only while the group's PEL names this consumer as its
 * owner (XPENDING of the one id), in the same script: nothing can move it between the look and
 * the claim.
 *
 * KEYS stream; ARGV group, consumer, n, then n XCLAIM options (`JUSTID` for a touch; none for a
 * retry, which takes the bodies and one more delivery; `IDLE ms [RETRYCOUNT c] JUSTID` for a
 * release), then the ids. Answers `{ claimed, lost }`: XCLAIM's reply for the ids still this
 * consumer's (in chunks of 1,000 ids: Lua's stack), and the ids that were not (held by a peer, or
 * no longer pending).
 */
export const OWNED_CLAIM_SCRIPT = `
local stream, group, me = KEYS[1], ARGV[1], ARGV[2]
local first_id = 4 + tonumber(ARGV[3])
local mine, lost = {}, {}
for i = first_id, #ARGV do
  local row = redis.call('XPENDING', stream, group, ARGV[i], ARGV[i], 1)[1]
  if row and row[2] == me then mine[#mine + 1] = ARGV[i] else lost[#lost + 1] = ARGV[i] end
end
local claimed = {}
for first = 1, #mine, 1000 do
  local args = { 'XCLAIM', stream, group, me, 0 }
  for j = first, math.min(first + 999, #mine) do args[#args + 1] = mine[j] end
  for j = 4, first_id - 1 do args[#args + 1] = ARGV[j] end
  local reply = redis.call(unpack(args))
  for k = 1, #reply do claimed[#claimed + 1] = reply[k] end
end
return { claimed, lost }
`;

/** SHA1 of {@link OWNED_CLAIM_SCRIPT}, for EVALSHA. */
export const OWNED_CLAIM_SHA = createHash('sha1').update(OWNED_CLAIM_SCRIPT).digest('hex');
