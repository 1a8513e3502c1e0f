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

/**
 * Orders stream entry ids as the server does (by ms, then seq; an ms-only id's seq is 0): negative
 * when `a` is older. The parts are compared as decimal texts, exact at any size and with nothing
 * allocated (an exactly-once commit orders every entry of a call: BigInts cost ~0.4 KB of garbage
 * per entry there).
 */
export function compareEntryIds(a: string, b: string): number {
  const aDash = a.indexOf('-');
  const bDash = b.indexOf('-');
  // parts of equal lengths (ids of one batch, mostly): digit texts of one length order as text
  if (aDash === bDash && a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
  const aMsEnd = aDash < 0 ? a.length : aDash;
  const bMsEnd = bDash < 0 ? b.length : bDash;
  return (
    compareDecimals(a, 0, aMsEnd, b, 0, bMsEnd) ||
    compareDecimals(
      a,
      aDash < 0 ? a.length : aDash + 1,
      a.length,
      b,
      bDash < 0 ? b.length : bDash + 1,
      b.length,
    )
  );
}

/**
 * Orders the decimal texts `x[xFrom, xTo)` and `y[yFrom, yTo)` by value (an empty one is 0):
 * leading zeros skipped, then the longer is greater, then the first digit that differs decides.
 */
function compareDecimals(
  x: string,
  xFrom: number,
  xTo: number,
  y: string,
  yFrom: number,
  yTo: number,
): number {
  while (xFrom < xTo && x.charCodeAt(xFrom) === 48) xFrom++;
  while (yFrom < yTo && y.charCodeAt(yFrom) === 48) yFrom++;
  const length = xTo - xFrom - (yTo - yFrom);
  if (length !== 0) return length < 0 ? -1 : 1;
  for (; xFrom < xTo; xFrom++, yFrom++) {
    const digit = x.charCodeAt(xFrom) - y.charCodeAt(yFrom);
    if (digit !== 0) return digit < 0 ? -1 : 1;
  }
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
