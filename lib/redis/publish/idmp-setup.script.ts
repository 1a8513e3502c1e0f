import { createHash } from 'node:crypto';

/**
 * Makes a stream ready for IDMP writes that must hold an id for `duration` seconds
 * (docs/publishing.md "Idempotent publish", on Redis 8.6), atomically on the server:
 * - a missing stream is created empty (a group created and destroyed at once, so no entry is
 *   added and no id is used), so the first write lands in a stream already configured;
 * - a stream whose size is below `maxsize` has the server's defaults (100 s, 100 ids), not ours:
 *   it gets `duration` and `maxsize`; one set up by another app with a shorter duration is raised
 *   to `duration`, a longer one kept (raise only: two apps with different windows do not undo
 *   each other, and XCFGSET forgets the ids it holds, so it runs only when it must).
 *
 * KEYS[1] the stream. ARGV[1] the duration in seconds, ARGV[2] the size per producer id.
 * Returns the duration and size the stream has now.
 */
export const IDMP_SETUP_SCRIPT = `
local duration = tonumber(ARGV[1])
local maxsize = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], 'echo-stream:idmp-setup', '$', 'MKSTREAM')
  redis.call('XGROUP', 'DESTROY', KEYS[1], 'echo-stream:idmp-setup')
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local has = {}
for i = 1, #info, 2 do has[info[i]] = info[i + 1] end
local haveDuration = tonumber(has['idmp-duration']) or 0
local haveSize = tonumber(has['idmp-maxsize']) or 0
if haveSize < maxsize or haveDuration < duration then
  if haveSize >= maxsize and haveDuration > duration then duration = haveDuration end
  redis.call('XCFGSET', KEYS[1], 'IDMP-DURATION', duration, 'IDMP-MAXSIZE', maxsize)
  return { duration, maxsize }
end
return { haveDuration, haveSize }
`;

/** SHA1 of {@link IDMP_SETUP_SCRIPT}, for EVALSHA. */
export const IDMP_SETUP_SHA = createHash('sha1').update(IDMP_SETUP_SCRIPT).digest('hex');
