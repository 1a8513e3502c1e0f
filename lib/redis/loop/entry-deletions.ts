import { createHash } from 'node:crypto';
import type { CommandLink, ServerFeatures } from '../connection';
import type { DeletionSweep, EntryDeletions } from './ack-roles';

/**
 * Lua shared by the scripts below: entry ids compared as numbers (`before`), the groups of a
 * stream with their last delivered id (`groupsOf`), and whether a group still needs an entry
 * (`held`: it has yet to read it, or holds it in its PEL): the Redis 7 form of XDELEX's ACKED.
 */
const HELD_LUA = `
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if #am ~= #bm then return #am < #bm end
  if am ~= bm then return am < bm end
  if #as ~= #bs then return #as < #bs end
  return as < bs
end
local function groupsOf(key)
  local out = {}
  for _, row in ipairs(redis.call('XINFO', 'GROUPS', key)) do
    local g = {}
    for i = 1, #row, 2 do g[row[i]] = row[i + 1] end
    out[#out + 1] = { name = g['name'], last = g['last-delivered-id'] }
  end
  return out
end
local function held(key, groups, id)
  for _, g in ipairs(groups) do
    if before(g.last, id) then return true end
    if #redis.call('XPENDING', key, g.name, id, id, 1) > 0 then return true end
  end
  return false
end
`;

/**
 * Removes the ids in ARGV that no group of the stream KEYS[1] holds or has yet to read (sent with
 * an XACK on a server without XDELEX). Answers how many it removed; 0 when the stream is gone.
 */
export const DELETE_ACKED_BY_ALL_SCRIPT = `${HELD_LUA}
local ok, groups = pcall(groupsOf, KEYS[1])
if not ok then return 0 end
local deleted = 0
for i = 1, #ARGV do
  if not held(KEYS[1], groups, ARGV[i]) then deleted = deleted + redis.call('XDEL', KEYS[1], ARGV[i]) end
end
return deleted
`;

/** SHA1 of {@link DELETE_ACKED_BY_ALL_SCRIPT}, for EVALSHA. */
export const DELETE_ACKED_BY_ALL_SHA = createHash('sha1')
  .update(DELETE_ACKED_BY_ALL_SCRIPT)
  .digest('hex');

/**
 * One look of the sweep: up to ARGV[2] entries of KEYS[1] from ARGV[1] (an XRANGE start) up to
 * the oldest last delivered id of its groups (later ones some group has yet to read), removed
 * when no group holds them: XDELEX ... ACKED with ARGV[3] = '1', the Redis 7 check otherwise.
 * Answers { removed, the last id looked at ('' for none), the number of groups, ids looked at }.
 */
const SWEEP_SCRIPT = `${HELD_LUA}
local ok, groups = pcall(groupsOf, KEYS[1])
if not ok or #groups == 0 then return { 0, '', 0, 0 } end
local upto = groups[1].last
for _, g in ipairs(groups) do
  if before(g.last, upto) then upto = g.last end
end
if upto == '0-0' then return { 0, '', #groups, 0 } end
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], upto, 'COUNT', ARGV[2])
if #entries == 0 then return { 0, '', #groups, 0 } end
local ids = {}
for i, entry in ipairs(entries) do ids[i] = entry[1] end
local deleted = 0
if ARGV[3] == '1' then
  for _, code in ipairs(redis.call('XDELEX', KEYS[1], 'ACKED', 'IDS', #ids, unpack(ids))) do
    if code == 1 then deleted = deleted + 1 end
  end
else
  for _, id in ipairs(ids) do
    if not held(KEYS[1], groups, id) then deleted = deleted + redis.call('XDEL', KEYS[1], id) end
  end
end
return { deleted, ids[#ids], #groups, #ids }
`;

const SWEEP_SHA = createHash('sha1').update(SWEEP_SCRIPT).digest('hex');

/** {@link EntryDeletions} on one link: XDELEX where the server has it (XACKDEL's family). */
export class RedisEntryDeletions implements EntryDeletions {
  constructor(
    private readonly link: CommandLink,
    private readonly features: ServerFeatures,
  ) {}

  async sweep(stream: string, after: string | null, count: number): Promise<DeletionSweep> {
    const native = this.features.uses('XACKDEL');
    const start = after === null ? '-' : `(${after}`;
    const limit = Math.max(1, Math.floor(count));
    const args = [stream, start, limit, native ? '1' : '0'];
    const reply = (await this.link.sendScript(SWEEP_SCRIPT, SWEEP_SHA, [1, ...args])) as unknown[];
    const scanned = Number(reply[3]) || 0;
    return {
      deleted: Number(reply[0]) || 0,
      // a look that reached the end (fewer than asked) starts over from the oldest next time
      next: scanned < limit ? null : String(reply[1]),
      groups: Number(reply[2]) || 0,
    };
  }
}
