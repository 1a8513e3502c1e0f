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
