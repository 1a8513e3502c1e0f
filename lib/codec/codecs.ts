import { inspect } from 'node:util';
import { CodecOption, StreamCodec } from '../interfaces/codec.interface';
import { isTraceField } from './trace-fields';
import { PARTITION_KEY_FIELD } from './partition-key';
import { boundedText, ERROR_TEXT_MAX_BYTES } from './bounded-text';

/** The field that carries the producer's branded id; never part of a codec's field map. */
export const ID_FIELD = 'id';
/** The field of the `'json'` codec that carries the JSON text of the payload. */
export const DATA_FIELD = 'data';

/** Thrown by a codec when an entry cannot become a payload; the entry is a `decode_error`. */
export class DecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DecodeError';
  }
}

/** The default wire format: `id` + `data` (JSON text). */
export const jsonCodec: StreamCodec<unknown> = {
  encode(payload: unknown): Record<string, string> {
    const data = JSON.stringify(payload);
    if (data === undefined) {
      throw new TypeError('the json codec cannot encode undefined or a function');
    }
    return { [DATA_FIELD]: data };
  },
  decode(fields: Record<string, string>): unknown {
    return parseData(fields[DATA_FIELD]);
  },
};

/** Every field except `id` (and the trace fields `traceparent`, `tracestate`) is the payload, as strings. */
export const fieldsCodec: StreamCodec<Record<string, string>> = {
  encode(payload: Record<string, string>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(payload)) {
      if (key === ID_FIELD) {
        throw new TypeError(`the fields codec cannot carry a field named '${ID_FIELD}'`);
      }
      out[key] = String(value);
    }
    return out;
  },
  decode(fields: Record<string, string>): Record<string, string> {
    return fields;
  },
};

/** The codec object behind a {@link CodecOption}. */
export function resolveCodec(option: CodecOption): StreamCodec<unknown> {
  if (option === 'json') return jsonCodec;
  if (option === 'fields') return fieldsCodec as StreamCodec<unknown>;
  if (option && typeof option.encode === 'function' && typeof option.decode === 'function') {
    return option;
  }
  throw new TypeError(
    `codec must be 'json', 'fields' or { encode, decode }, got ${describe(option)}`,
  );
}

/** A decoded entry: the branded id (when the entry carries one) and the payload. */
export interface DecodedEntry {
  id: string | undefined;
  payload: unknown;
}

/**
 * Decodes a flat XREADGROUP field list (`[f1, v1, f2, v2, ...]`).
 * The `'json'` codec reads its two fields straight from the list (no intermediate map): this
 * runs once per entry on the hot path.
 * @param keyed an entry of a partition stream: its `pkey` field (the partition key) is the
 *   module's, not the codec's. Default `false`: every field but `id` and the trace fields reaches
 *   the codec.
 * @throws DecodeError when the codec cannot decode the entry.
 */
export function decodeEntry(
  codec: StreamCodec<unknown>,
  flat: readonly string[],
  keyed = false,
): DecodedEntry {
  if (codec === jsonCodec) {
    let id: string | undefined;
    let data: string | undefined;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const key = flat[i];
      if (key === ID_FIELD) id = flat[i + 1];
      else if (key === DATA_FIELD) data = flat[i + 1];
    }
    return { id, payload: parseData(data) };
  }
  const fields: Record<string, string> = {};
  let id: string | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (flat[i] === ID_FIELD) id = flat[i + 1];
    // the partition key is the module's field only on a partition stream; elsewhere a field of
    // that name is the producer's own and reaches the codec
    else if (!isTraceField(flat[i]) && !(keyed && flat[i] === PARTITION_KEY_FIELD))
      fields[flat[i]] = flat[i + 1];
  }
  try {
    return { id, payload: codec.decode(fields) };
  } catch (err) {
    throw err instanceof DecodeError ? err : new DecodeError(errorText(err));
  }
}

/** Builds the flat XADD field list: `id` first, then the codec's fields. */
export function encodeEntry(codec: StreamCodec<unknown>, id: string, payload: unknown): string[] {
  const encoded = codec.encode(payload);
  const flat: string[] = [ID_FIELD, id];
  for (const key of Object.keys(encoded)) {
    if (key === ID_FIELD || isTraceField(key)) {
      throw new TypeError(`a codec's encode() must not return the reserved field '${key}'`);
    }
    const value = encoded[key];
    if (typeof value !== 'string') {
      throw new TypeError(
        `a codec's encode() must return strings; field '${key}' is ${typeof value}`,
      );
    }
    flat.push(key, value);
  }
  return flat;
}

/** `[f1, v1, ...]` -> `{ f1: v1, ... }`. */
export function fieldsToRecord(flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

/** The branded id field of a flat field list, if any. */
export function brandedIdOf(flat: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] === ID_FIELD) return flat[i + 1];
  return undefined;
}

/**
 * Error text for logs and dead letters: the message, never `{}`, and never longer than `maxBytes`
 * UTF-8 bytes (cut by {@link boundedText}: a thrown megabyte stays out of Redis and the logs). It
 * never throws, whatever was thrown: a null-prototype object, a cycle, a getter or a Proxy trap
 * that throws each fall back to the next way of printing it, down to a fixed text naming its type.
 * @param maxBytes @default ERROR_TEXT_MAX_BYTES (8192); `Infinity` for a part of a longer text
 * that is bounded as a whole.
 */
export function errorText(err: unknown, maxBytes: number = ERROR_TEXT_MAX_BYTES): string {
  for (const print of PRINTERS) {
    try {
      const text = print(err);
      if (typeof text === 'string' && text !== '') return boundedText(text, maxBytes);
    } catch {
      // the next printer
    }
  }
  return `an unprintable ${typeof err}`;
}

/**
 * The stack of a thrown Error, for the logger; `undefined` for anything else or when it throws.
 * Bounded like {@link errorText}: the stack's first line is the message, so a long message is cut
 * there and the frames, the part worth reading, are kept.
 * @param maxBytes @default ERROR_TEXT_MAX_BYTES (8192)
 */
export function errorStack(
  err: unknown,
  maxBytes: number = ERROR_TEXT_MAX_BYTES,
): string | undefined {
  let stack: unknown;
  try {
    stack = err instanceof Error ? err.stack : undefined;
  } catch {
    return undefined;
  }
  return typeof stack === 'string' ? boundedStack(stack, maxBytes) : undefined;
}

/** The least room kept for the head of a cut stack (its message); frames longer than the rest go. */
const STACK_HEAD_MIN_BYTES = 1024;

function boundedStack(stack: string, maxBytes: number): string {
  const bounded = boundedText(stack, maxBytes);
  if (bounded === stack) return stack;
  const framesAt = stack.search(/\n\s+at /);
  if (framesAt < 0) return bounded;
  const frames = stack.slice(framesAt);
  const headRoom = maxBytes - Buffer.byteLength(frames, 'utf8');
  if (headRoom < STACK_HEAD_MIN_BYTES) return bounded;
  return boundedText(stack.slice(0, framesAt), headRoom) + frames;
}

/** Ways to print a thrown value, best first; each may throw or give nothing (then the next). */
const PRINTERS: ReadonlyArray<(err: unknown) => unknown> = [
  (err) => {
    if (!(err instanceof Error)) return undefined;
    const message: unknown = err.message;
    return typeof message === 'string' && message !== '' ? message : err.name;
  },
  (err) => (err instanceof Error ? `${err.name} (its message cannot be read)` : undefined),
  (err) => (typeof err === 'string' ? err : undefined),
  (err) => {
    if (typeof err !== 'object' || err === null) return undefined;
    const json = JSON.stringify(err);
    return json === '{}' ? undefined : json; // inspect() says more: its class, a null prototype
  },
  // cycles, null prototypes, BigInts; getters are not called, Proxies are shown as their target
  (err) => inspect(err, { depth: 2, breakLength: Infinity, getters: false }),
  (err) => String(err),
];

function parseData(data: string | undefined): unknown {
  if (data === undefined) throw new DecodeError(`entry has no '${DATA_FIELD}' field`);
  try {
    return JSON.parse(data);
  } catch (err) {
    throw new DecodeError(
      boundedText(`'${DATA_FIELD}' is not valid JSON: ${errorText(err, Infinity)}`),
    );
  }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : typeof value;
}
