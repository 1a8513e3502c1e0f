/** Text output of the CLI: aligned tables and short durations. */

/** Columns whose header is listed here are right-aligned (numbers). */
export function table(
  headers: string[],
  rows: Array<Array<string | number>>,
  numeric: string[] = [],
): string {
  const cells = rows.map((row) => row.map((cell) => oneLine(String(cell))));
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

/** Control characters (a newline, an escape sequence) in a value would break or hijack the terminal. */
function oneLine(text: string): string {
  return text.replace(
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** As `oneLine`, for text printed outside a table. */
export const safeText = oneLine;
