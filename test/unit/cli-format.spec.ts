/**
 * What the CLI prints (lib/cli/format.ts): characters a terminal would act on or not show are
 * escaped as `\uXXXX`, so `rtl\u202Egnp.exe` cannot pass for another name, and the escapes are
 * JSON's own, so `--json` output stays valid JSON with the same values.
 */
import { printable, safeText, table } from '../../lib/cli/format';

const INVISIBLE = [
  ...'\u200B\u200C\u200D\u200E\u200F',
  ...'\u202A\u202B\u202C\u202D\u202E',
  ...'\u2066\u2067\u2068\u2069',
  ...'\u061C\uFEFF\u2060\u2061\u2062\u2063\u2064',
  ...'\u2028\u2029\u00AD\u115F\u3164',
  '\u{E0041}', // a tag character (astral)
];

describe('CLI text output', () => {
  it('escapes bidirectional and invisible format characters, controls and separators', () => {
    expect(safeText('rtl\u202Egnp.exe')).toBe('rtl\\u202Egnp.exe');
    expect(safeText('a\u001b[31mb\nc\u0085d\u007f')).toBe('a\\u001B[31mb\\u000Ac\\u0085d\\u007F');
    expect(safeText('tag\u{E0041}')).toBe('tag\\uDB40\\uDC41');
    expect(safeText('lone\uD800')).toBe('lone\\uD800');
    for (const char of INVISIBLE) {
      expect(safeText(`x${char}y`)).toMatch(/^x(\\u[0-9A-F]{4})+y$/);
    }
    // visible text is left alone: accents, CJK, emoji, RTL letters themselves
    expect(safeText('café 注文 📦 שלום')).toBe('café 注文 📦 שלום');
  });

  it('printable keeps newlines; on JSON it gives valid JSON with the same values', () => {
    expect(printable('a\u202Eb\nc\u001bd')).toBe('a\\u202Eb\nc\\u001Bd');
    const value = {
      stream: `rtl\u202Egnp.exe`,
      all: INVISIBLE.join('|'),
      c1: '\u0085',
      back: '\\\u202E',
    };
    const out = printable(JSON.stringify(value));
    expect(out).toMatch(/^[\x20-\x7e\n]*$/);
    expect(JSON.parse(out)).toEqual(value);
  });

  it('a table aligns on the escaped text', () => {
    const lines = table(
      ['NAME', 'N'],
      [
        [`a\u202Eb`, 1],
        ['abcdefgh', 22],
      ],
      ['N'],
    ).split('\n');
    expect(lines).toEqual(['NAME       N', 'a\\u202Eb   1', 'abcdefgh  22']);
  });
});
