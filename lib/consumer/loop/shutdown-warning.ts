import type { DeadLetterInFlight } from '../settle';

/**
 * The warning of a stop that gave up after `ms`: what still runs, by entry id (handlers, or the
 * entry on the dead-letter path and its step), and what becomes of it.
 */
export function stillRunning(
  inHandlers: readonly string[],
  dying: DeadLetterInFlight | undefined,
  ms: number,
): string {
  const running: string[] = [];
  if (inHandlers.length > 0)
    running.push(
      `handlers still running after ${ms} ms (entries ${inHandlers.join(', ')}); ` +
        `they stay pending and are reclaimed after minIdleMs`,
    );
  if (dying) {
    const what = dying.step === 'handlers' ? '@DeadLetter methods' : 'the dead-letter copy (XADD)';
    const one = dying.entryIds.length === 1;
    running.push(
      `${what} still running after ${ms} ms for ${one ? 'entry' : 'entries'} ` +
        `${dying.entryIds.join(', ')}; ${one ? 'it stays' : 'they stay'} pending and ` +
        `${one ? 'is' : 'are'} dead-lettered again by whoever takes ${one ? 'it' : 'them'} over ` +
        `(reclaim after minIdleMs, or a restart)`,
    );
  }
  if (running.length === 0)
    return `a Redis command was still outstanding after ${ms} ms; closing the connection`;
  return running.join('; ');
}
