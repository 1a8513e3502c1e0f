import type { StreamMessage } from '../../interfaces/stream-message.interface';

/**
 * Splits one read into lanes for `newerWins` (docs/delivery.md "Duplicates and stale replays"):
 * the entries of one key in one lane, in stream order; an entry without a key in a lane of its
 * own. Lanes come in the order of their first entry. A lane runs one entry at a time, so two
 * entries of one key never run at once and run in stream order, whatever `concurrency` is.
 */
export function keyLanes(
  messages: readonly StreamMessage<unknown>[],
  keyOf: (message: StreamMessage<unknown>) => string | undefined,
): StreamMessage<unknown>[][] {
  const lanes: StreamMessage<unknown>[][] = [];
  const byKey = new Map<string, StreamMessage<unknown>[]>();
  for (const message of messages) {
    const key = keyOf(message);
    if (key === undefined) {
      lanes.push([message]);
      continue;
    }
    const lane = byKey.get(key);
    if (lane) lane.push(message);
    else {
      const opened = [message];
      byKey.set(key, opened);
      lanes.push(opened);
    }
  }
  return lanes;
}
