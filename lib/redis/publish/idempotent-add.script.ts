import { createHash } from 'node:crypto';

/**
 * Lua shared by the XADD-building scripts: appends `MAXLEN ~ <maxLen>` to the XADD's `args`
 * unless the local `maxLen` is `''` (no trimming).
 */
export const LUA_TRIM_ARGS = `
if maxLen ~= '' then
  args[#args + 1] = 'MAXLEN'
  args[#args + 1] = '~'
  args[#args + 1] = maxLen
end`;

/**
 * Idempotent XADD (docs/publishing.md "Idempotent publish"): each item is written only when its
 * index key (one per branded id, expiring after the window) does not exist yet; a repeat answers
 * the entry id the index holds and writes nothing. One script call is atomic on the server, so
 * two publishes of one id racing each other write one entry, and repeats inside one call answer
 * the entry the first of them wrote.
 *
 * KEYS[1] the stream; KEYS[1 + i] the index key of item i. ARGV[1] the window in ms, ARGV[2]
 * MAXLEN (`''`: no trimming), ARGV[3] `'1'` to rewrite a repeat's index key (same value, same
 * expiry: a write, so a WAIT after the call counts the replicas that have the first write too;
 * `''`: a repeat writes nothing), then per item its field count and its fields. Returns per item
 * its entry id: the one written now, or the earlier write's for a repeat.
 */
export const IDEMPOTENT_ADD_SCRIPT = `
local window = ARGV[1]
local maxLen = ARGV[2]
local touch = ARGV[3] == '1'
local out = {}
local at = 4
for i = 2, #KEYS do
  local count = tonumber(ARGV[at])
  local seen = redis.call('GET', KEYS[i])
  if seen then
    if touch then redis.call('SET', KEYS[i], seen, 'KEEPTTL') end
    out[#out + 1] = seen
  else
    local args = { 'XADD', KEYS[1] }
${LUA_TRIM_ARGS}
    args[#args + 1] = '*'
    for j = 1, count do args[#args + 1] = ARGV[at + j] end
    local entryId = redis.call(unpack(args))
    redis.call('SET', KEYS[i], entryId, 'PX', window)
    out[#out + 1] = entryId
  end
  at = at + count + 1
end
return out
`;

/** SHA1 of {@link IDEMPOTENT_ADD_SCRIPT}, for EVALSHA. */
export const IDEMPOTENT_ADD_SHA = createHash('sha1').update(IDEMPOTENT_ADD_SCRIPT).digest('hex');
