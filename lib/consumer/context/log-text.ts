/** How many items a log line names before it says how many more. */
const NAMED_IN_A_LINE = 5;

/**
 * The first few of `items`, then how many more (`a, b, c, d, e and 7 more`): a log line about a
 * batch stays one line however large the batch.
 */
export function firstFew(items: readonly string[]): string {
  const shown = items.slice(0, NAMED_IN_A_LINE).join(', ');
  const more = items.length - NAMED_IN_A_LINE;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

/**
 * What the log says of held entries the group's PEL no longer names this consumer as the owner
 * of (docs/delivery.md "A consumer that froze"): the heartbeat, the claim of due retries and the
 * dead-letter path say it in the same words.
 */
export const NO_LONGER_OURS =
  "no longer this consumer's (taken over by a peer while this process did not answer for " +
  'minIdleMs, or acked): left to their owner';
