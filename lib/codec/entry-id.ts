/** Helpers over Redis stream entry ids (`<ms>-<seq>`); no commands. */

/**
 * The milliseconds part of a stream entry id (`1700000000000-0` -> 1700000000000): the server time
 * the entry was added, for ids the server assigned (`XADD ... *`).
 * @throws TypeError when `entryId` is not `<ms>` or `<ms>-<seq>`.
 */
export function entryIdMs(entryId: string): number {
  const match = /^(\d+)(?:-\d+)?$/.exec(entryId);
  if (!match) throw new TypeError(`not a stream entry id: ${JSON.stringify(entryId)}`);
  return Number(match[1]);
}

/** Orders stream entry ids as the server does (by ms, then seq): negative when `a` is older. */
export function compareEntryIds(a: string, b: string): number {
  const [aMs, aSeq] = split(a);
  const [bMs, bSeq] = split(b);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  if (aSeq !== bSeq) return aSeq < bSeq ? -1 : 1;
  return 0;
}

function split(entryId: string): [bigint, bigint] {
  const dash = entryId.indexOf('-');
  const ms = dash < 0 ? entryId : entryId.slice(0, dash);
  const seq = dash < 0 ? '0' : entryId.slice(dash + 1);
  return [BigInt(ms), BigInt(seq)];
}

/** True for a complete or ms-only stream entry id (`1700000000000-0`, `1700000000000`). */
export function isEntryId(value: string): boolean {
  return /^\d+(?:-\d+)?$/.test(value);
}

/**
 * The smallest entry id greater than `entryId` (`5-3` -> `5-4`): an `XTRIM MINID` bound that
 * keeps everything after `entryId` and nothing before it.
 */
export function nextEntryId(entryId: string): string {
  const [ms, seq] = split(entryId);
  return seq === 18_446_744_073_709_551_615n ? `${ms + 1n}-0` : `${ms}-${seq + 1n}`;
}
