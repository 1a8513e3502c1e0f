export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Percentile (nearest rank) of an ascending-sorted array. */
export function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function fmt(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return '-';
  return x.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

export function fmtSig(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '-';
  if (Math.abs(x) >= 100) return fmt(x, 0);
  if (Math.abs(x) >= 10) return fmt(x, 1);
  if (Math.abs(x) >= 1) return fmt(x, 2);
  return fmt(x, 3);
}

/** median, min and max of `runs[i][key]` over the runs where it is a number. */
export function spread(runs, key) {
  const xs = runs.map((r) => r[key]).filter((x) => typeof x === 'number' && !Number.isNaN(x));
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/**
 * a / b of one figure per round both ran in: `pick(run)` gives the figure, null for none.
 * @returns {{ median: number, min: number, max: number, ratios: number[] } | null}
 */
export function pairedBy(runs, a, b, pick) {
  const rounds = new Map();
  for (const r of runs) {
    if (!r.valid) continue;
    const x = pick(r);
    if (typeof x !== 'number' || !(x > 0)) continue;
    const side = r.contender === a ? 'a' : r.contender === b ? 'b' : null;
    if (!side) continue;
    (rounds.get(r.round) ?? rounds.set(r.round, {}).get(r.round))[side] = x;
  }
  const ratios = [...rounds.values()].filter((x) => x.a && x.b).map((x) => x.a / x.b);
  if (ratios.length === 0) return null;
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), ratios };
}
