import { createHash } from 'node:crypto';
import { LUA_TRIM_ARGS } from './idempotent-add.script';

/**
 * The XADD ... IDMP of many items in one call (docs/publishing.md "Idempotent publish", Redis
 * 8.6): the server's IDMP keeps the ids, as for a single XADD ... IDMP, so the two see each
 * other's; the script only saves the client a pipeline of many commands (measured: a
 * `publishMany` of 100 runs about 1.2x faster than the same XADDs pipelined).
 *
 * KEYS[1] the stream. ARGV[1] MAXLEN (`''`: no trimming), then per item its producer id, its
 * idempotent id (the branded id), its field count and its fields. Returns nil when the stream
 * does not exist (it was deleted since it was set up: nothing is written, the caller sets it up
 * again), else each item's entry id: the one written now, or the first write's for a repeat.
 */
export const IDMP_ADD_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local maxLen = ARGV[1]
local out = {}
local at = 2
while at <= #ARGV do
  local count = tonumber(ARGV[at + 2])
  local args = { 'XADD', KEYS[1], 'IDMP', ARGV[at], ARGV[at + 1] }
${LUA_TRIM_ARGS}
  args[#args + 1] = '*'
  for j = 1, count do args[#args + 1] = ARGV[at + 2 + j] end
  out[#out + 1] = redis.call(unpack(args))
  at = at + 3 + count
end
return out
`;

/** SHA1 of {@link IDMP_ADD_SCRIPT}, for EVALSHA. */
export const IDMP_ADD_SHA = createHash('sha1').update(IDMP_ADD_SCRIPT).digest('hex');
