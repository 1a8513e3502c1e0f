import type { ServerFeatureReport } from '../interfaces/redis-server.interface';
/** Text output of the CLI: aligned tables, short durations, and text a terminal shows as it is. */

/** Columns whose header is listed here are right-aligned (numbers). */
export function table(
  headers: string[],
  rows: Array<Array<string | number>>,
  numeric: string[] = [],
): string {
  const cells = rows.map((row) => row.map((cell) => safeText(String(cell))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i].length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) =>
        numeric.includes(headers[i]) ? cell.padStart(widths[i]) : cell.padEnd(widths[i]),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}

/** `1234` -> `1.2 s`; `null` -> `-`. */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${ms} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/**
 * What a terminal would act on or not show: controls (C0, DEL, C1: a newline, an escape
 * sequence), format characters (bidirectional controls U+202A-U+202E, U+2066-U+2069, U+061C,
 * U+200E/F; zero-width U+200B-U+200D, U+2060-U+2064, U+FEFF; tag characters), line and paragraph
 * separators, lone surrogates, and blank letters that pass for nothing (Hangul fillers, U+034F).
 * `rtl\u202Egnp.exe` would read as `rtlexe.png`.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u034F\u115F\u1160\u3164\uFFA0]/gu;
const HIDDEN_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u034F\u115F\u1160\u3164\uFFA0]/gu;

/** `\u202E` for U+202E; a character beyond U+FFFF as its two UTF-16 halves (valid in JSON too). */
function escaped(char: string): string {
  let out = '';
  for (let i = 0; i < char.length; i++) {
    out += `\\u${char.charCodeAt(i).toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return out;
}

/** One value on one line: every hidden character (newlines included) escaped as `\uXXXX`. */
export function safeText(text: string): string {
  return text.replace(HIDDEN, escaped);
}

/**
 * Everything the CLI prints, as the last step: hidden characters escaped, newlines kept. On JSON
 * the escapes are JSON's own (`\u202E` inside a string), so `--json` stays valid JSON and parses
 * back to the same values.
 */
export function printable(text: string): string {
  return text.replace(HIDDEN_BUT_NEWLINE, escaped);
}

/**
 * The newer server verbs as `inspect` shows them: what the server answers, and which of them this
 * version uses (CLAIM in every plain loop's read, IDMP for idempotent publishes, XACKDEL for
 * `deleteOnAck`).
 */
export function featureLine(report: ServerFeatureReport): string {
  if (report.error !== undefined) return `unknown (${safeText(report.error)})`;
  if (report.available.length === 0) return 'none (the Redis 7 path)';
  const used = report.used.length > 0 ? report.used.join(', ') : 'none';
  return `${report.available.join(', ')} (in use: ${used})`;
}
