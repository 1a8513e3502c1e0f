/** The warning of a stop that gave up (lib/consumer/loop/shutdown-warning.ts). */
import { stillRunning } from '../../lib/consumer/loop/shutdown-warning';

describe('stillRunning', () => {
  it('names the entries still in handlers and what becomes of them', () => {
    expect(stillRunning(['1-0', '2-0'], undefined, 500)).toBe(
      'handlers still running after 500 ms (entries 1-0, 2-0); they stay pending and are reclaimed after minIdleMs',
    );
  });

  it('names the entries on the dead-letter path and their step', () => {
    expect(stillRunning([], { entryIds: ['3-0'], step: 'handlers' }, 500)).toBe(
      '@DeadLetter methods still running after 500 ms for entry 3-0; it stays pending and is ' +
        'dead-lettered again by whoever takes it over (reclaim after minIdleMs, or a restart)',
    );
    expect(stillRunning(['1-0'], { entryIds: ['3-0', '4-0'], step: 'copy' }, 500)).toMatch(
      /^handlers still running .*; the dead-letter copy \(XADD\) still running after 500 ms for entries 3-0, 4-0; they stay pending and are dead-lettered again by whoever takes them over/,
    );
  });

  it('with nothing running, a Redis command was outstanding', () => {
    expect(stillRunning([], undefined, 500)).toBe(
      'a Redis command was still outstanding after 500 ms; closing the connection',
    );
  });
});
