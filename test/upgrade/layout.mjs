// The layout of the upgrade test's scenario (test/upgrade/run.mjs): streams, group, published
// entries and process names, shared by the run and its checks (verify.mjs); the stream, group and
// partition names must match app/main.js.

export const PLAIN = 'upg-plain';
export const PART = 'upg-part';
export const GROUP = 'g';
export const PARTITIONS = 4;
export const PARTITION_STREAMS = Array.from({ length: PARTITIONS }, (_, i) => `${PART}:p:${i}`);

// the published entries
export const OLD_PLAIN = 300; // o-p-<n>, fails when n % 10 === 7
export const NEW_PLAIN = 200; // n-p-<n>, fails when n % 10 === 3
export const KEYS = 16; // k00..k15 on the partitioned stream
export const OLD_SEQS = 30; // seq 0..29 of every key by the old producer
export const NEW_SEQS = 15; // seq 30..44 by the new producer
export const partFails = (seq) => seq % 13 === 6; // seq 6, 19, 32 of every key

export const NAMES = { A: 'old-A', B: 'old-B', C: 'new-C', D: 'new-D' };
export const KILLED = NAMES.A;
/** A is killed once it has handled this many plain and this many partitioned entries. */
export const KILL_AFTER = { plain: 20, part: 10 };

/** The JSON payload of an entry's fields (`data`), `{}` when it has none. */
export function payloadOf(fields) {
  try {
    return JSON.parse(fields.data) ?? {};
  } catch {
    return {};
  }
}
