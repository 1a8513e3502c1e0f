import { createHash } from 'node:crypto';

/**
 * The group budget of `rateLimit: { scope: 'group' }` (docs/delivery.md "Rate limits"): fixed
 * windows of `perMs` on the server's clock (`TIME`, one clock for every consumer), at most `max`
 * starts granted per window over all callers. One call takes up to `want` starts at once (a
 * refill), so it runs once per read, not per entry. The key holds `<window>:<used>` and expires
 * after two windows.
 *
 * KEYS[1] budget key; ARGV max, perMs, want. Returns `{ granted, msUntilNextWindow }`.
 */
export const RATE_BUDGET_SCRIPT = `
local max = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = math.floor(now / per)
local used = 0
local current = redis.call('GET', KEYS[1])
if current then
  local sep = string.find(current, ':', 1, true)
  if sep and tonumber(string.sub(current, 1, sep - 1)) == window then
    used = tonumber(string.sub(current, sep + 1)) or 0
  end
end
local granted = math.max(0, math.min(want, max - used))
redis.call('SET', KEYS[1], string.format('%d:%d', window, used + granted), 'PX', per * 2)
return { granted, (window + 1) * per - now }
`;

/** SHA1 of {@link RATE_BUDGET_SCRIPT}, for EVALSHA. */
export const RATE_BUDGET_SHA = createHash('sha1').update(RATE_BUDGET_SCRIPT).digest('hex');
