// The messages every contender moves: ~200-byte JSON, with a sequence number (dedup and the
// handled == N gate) and `t`, the publish time in µs of the shared monotonic clock (latency runs;
// CLOCK_MONOTONIC is one clock for every process of the machine).

export const PAYLOAD_BYTES = 200;

const base = (seq, t) => ({
  seq,
  t,
  type: 'order.created',
  customer: `cust-${seq % 9973}`,
  sku: `SKU-${seq % 1009}`,
  qty: 1 + (seq % 7),
  amount: 1999 + (seq % 500),
  currency: 'EUR',
  note: '',
});

// pad `note` so a typical payload (6-digit seq, 13-digit t) is PAYLOAD_BYTES of JSON
const NOTE = 'n'.repeat(
  Math.max(0, PAYLOAD_BYTES - JSON.stringify(base(123456, 1234567890123)).length),
);

export function makePayload(seq, t = 0) {
  const p = base(seq, t);
  p.note = NOTE;
  return p;
}

/** The payload with the `account` (one of `accounts`) that keyed guarantees (`newerWins`) key on. */
export function accountPayload(seq, accounts) {
  return { ...makePayload(seq), account: `acct-${seq % accounts}` };
}

/** Microseconds of CLOCK_MONOTONIC (the same clock in every process of this machine). */
export function nowUs() {
  return Number(process.hrtime.bigint()) / 1000;
}

/**
 * The library's wire format (docs/publishing.md, 'json' codec): fields `id` (a sortable text like a
 * branded id) and `data` (`payload`, by default the bench's own).
 */
export function streamFields(seq, t = 0, payload = makePayload(seq, t)) {
  return ['id', `bench-${String(seq).padStart(9, '0')}`, 'data', JSON.stringify(payload)];
}
