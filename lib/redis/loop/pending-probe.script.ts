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
