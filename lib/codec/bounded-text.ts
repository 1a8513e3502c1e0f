/**
 * How many UTF-8 bytes of error text a dead letter, a log line or a counter keeps (marker
 * included): a handler that throws a megabyte must not write a megabyte to Redis, to the logs
 * twice (message and stack) and to every dashboard answer (docs/dead-letters.md).
 */
export const ERROR_TEXT_MAX_BYTES = 8192;

/**
 * `text` when it fits in `maxBytes` UTF-8 bytes; otherwise its head, cut at a character boundary
 * (never inside a multi-byte character or a surrogate pair), followed by the marker
 * `... [cut: N more bytes]`, N being the UTF-8 bytes of `text` left out. The whole result,
 * marker included, fits in `maxBytes`, so bounding a bounded text again changes nothing.
 * `maxBytes` should leave room for the marker (it is about 40 bytes); `Infinity` keeps the text.
 *
 * @param maxBytes @default ERROR_TEXT_MAX_BYTES (8192)
 */
export function boundedText(text: string, maxBytes: number = ERROR_TEXT_MAX_BYTES): string {
  // a UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair: 2 units, 4 bytes), so a short
  // text fits without counting; this is every log line of a healthy app
  if (text.length * 3 <= maxBytes) return text;
  const total = Buffer.byteLength(text, 'utf8');
  if (total <= maxBytes) return text;
  // room for the widest marker this text can need: what is left out is never more than `total`
  const room = Math.max(0, maxBytes - Buffer.byteLength(cutMarker(total), 'utf8'));
  const { end, bytes } = headWithin(text, room);
  return text.slice(0, end) + cutMarker(total - bytes);
}

/** The mark at the end of a cut text. */
function cutMarker(leftOut: number): string {
  return `... [cut: ${leftOut} more bytes]`;
}

const encoder = new TextEncoder();

/**
 * The longest head of `text` (as a UTF-16 index) whose UTF-8 form fits in `room` bytes, and those
 * bytes. `encodeInto` stops before a character that does not fit whole (a surrogate pair is one
 * character) and reads no further than the room allows, so a megabyte costs `room` steps.
 */
function headWithin(text: string, room: number): { end: number; bytes: number } {
  const { read, written } = encoder.encodeInto(text, new Uint8Array(room));
  return { end: read, bytes: written };
}
