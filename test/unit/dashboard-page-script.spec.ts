/**
 * The pure parts of the dashboard's browser script (lib/dashboard/assets/dashboard.js), loaded
 * as the package ships it into a context without a DOM, where it exposes them instead of
 * starting the page.
 */
import * as vm from 'node:vm';
import { loadDashboardAssets } from '../../lib/dashboard/dashboard-page';

interface Keys {
  pending: string | null;
  dead: string | null;
  tail: string | null;
}
interface PageScript {
  showInvisible(text: string): string;
  textPieces(text: string): Array<{ text: string; escaped: boolean; code?: number }>;
  listKeys(stream: unknown, group: string | null): Keys;
  listsToFetch(held: Keys, current: Keys): string[];
}

function loadScript(): PageScript {
  const context: { echoStreamPage?: PageScript } = {};
  vm.runInNewContext(loadDashboardAssets().script, context);
  return context.echoStreamPage!;
}

const script = loadScript();

describe('showInvisible', () => {
  it('escapes bidirectional controls and zero-width marks, and leaves the rest alone', () => {
    expect(script.showInvisible('rtl\u202Egnp.exe')).toBe('rtl\\u202Egnp.exe');
    const invisible = [
      '\u200B',
      '\u200C',
      '\u200D',
      '\u200E',
      '\u200F',
      '\u202A',
      '\u202B',
      '\u202C',
      '\u202D',
      '\u202E',
      '\u2066',
      '\u2067',
      '\u2068',
      '\u2069',
      '\u061C',
      '\uFEFF',
      '\u2060',
      '\u2061',
      '\u2062',
      '\u2063',
      '\u2064',
      '\u00AD',
      '\u2028',
      '\u2029',
    ];
    for (const char of invisible) {
      const code = char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      expect(script.showInvisible(`a${char}b`)).toBe(`a\\u${code}b`);
    }
    // a tag character (beyond the BMP, invisible) in the \u{...} form
    expect(script.showInvisible('x\u{E0041}y')).toBe('x\\u{E0041}y');
    const visible = 'plain <b>&amp; "q" \\u202E typed, é ü 日本 🙂 \t';
    expect(script.showInvisible(visible)).toBe(visible);
  });

  it('cuts a text into plain and escaped pieces, in order', () => {
    expect(script.textPieces('a\u202Eb\u200B')).toEqual([
      { text: 'a', escaped: false },
      { text: '\\u202E', escaped: true, code: 0x202e },
      { text: 'b', escaped: false },
      { text: '\\u200B', escaped: true, code: 0x200b },
    ]);
    expect(script.textPieces('')).toEqual([]);
  });
});

describe('listKeys and listsToFetch', () => {
  const group = (name: string, over: object = {}) => ({
    group: name,
    pending: 3,
    lastDeliveredId: '5-0',
    consumers: [{ name: 'c1', pending: 3, idleMs: 10 }],
    deadLetters: 1,
    lag: 0,
    oldestPendingMs: 100,
    tpsIn: 1,
    tpsOut: 1,
    ...over,
  });
  const stream = (over: object = {}, groups = [group('billing'), group('shipping')]) => ({
    stream: 's',
    length: 10,
    entriesAdded: 12,
    deadLetters: 2,
    groups,
    ...over,
  });
  const fetched = (keys: Keys): Keys => ({ ...keys });
  const none: Keys = { pending: null, dead: null, tail: null };

  it('fetches every list at first, then none while only times and rates move', () => {
    const first = script.listKeys(stream(), 'billing');
    expect(script.listsToFetch(none, first)).toEqual(['pending', 'dead', 'tail']);
    const held = fetched(first);
    const later = stream({}, [
      group('billing', {
        oldestPendingMs: 5000,
        tpsIn: 9,
        consumers: [{ name: 'c1', pending: 3, idleMs: 9999 }],
      }),
      group('shipping', { lag: 4 }),
    ]);
    expect(script.listsToFetch(held, script.listKeys(later, 'billing'))).toEqual([]);
  });

  it('fetches a list again when what it shows moved', () => {
    const held = fetched(script.listKeys(stream(), 'billing'));
    const due = (over: object, groups?: ReturnType<typeof group>[]) =>
      script.listsToFetch(held, script.listKeys(stream(over, groups), 'billing'));
    // an ack, a delivery (same count), a claim to another consumer
    expect(due({}, [group('billing', { pending: 2 }), group('shipping')])).toEqual(['pending']);
    expect(due({}, [group('billing', { lastDeliveredId: '6-0' }), group('shipping')])).toEqual([
      'pending',
    ]);
    expect(
      due({}, [
        group('billing', {
          consumers: [
            { name: 'c1', pending: 2, idleMs: 0 },
            { name: 'c2', pending: 1, idleMs: 0 },
          ],
        }),
        group('shipping'),
      ]),
    ).toEqual(['pending']);
    // another group's dead letter, the stream's total
    expect(due({}, [group('billing'), group('shipping', { deadLetters: 2 })])).toEqual(['dead']);
    expect(due({ deadLetters: 3 })).toEqual(['dead']);
    // an entry added to a capped stream (same length), an entry trimmed
    expect(due({ entriesAdded: 13 })).toEqual(['tail']);
    expect(due({ length: 9 })).toEqual(['tail']);
    // the PEL of another group changing is not billing's
    expect(due({}, [group('billing'), group('shipping', { pending: 0 })])).toEqual([]);
  });

  it('keeps held lists when the overview cannot tell (stream missing or unreadable)', () => {
    const held = fetched(script.listKeys(stream(), 'billing'));
    expect(script.listsToFetch(held, script.listKeys(undefined, 'billing'))).toEqual([]);
    expect(
      script.listsToFetch(held, script.listKeys(stream({ error: 'WRONGTYPE' }, []), 'billing')),
    ).toEqual([]);
    // but a list never fetched (or whose fetch failed) is fetched
    expect(script.listsToFetch({ ...held, tail: null }, script.listKeys(undefined, 'b'))).toEqual([
      'tail',
    ]);
  });
});
