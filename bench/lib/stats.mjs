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
