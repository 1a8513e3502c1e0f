import type { StreamCodec } from '../interfaces/codec.interface';
import type { RpcErrorReason } from '../errors/echo-stream-rpc.error';

/**
 * The request/reply wire format of the microservices transport. A request is an entry of the
 * pattern's stream in the producer's format (`id`, the codec's fields) plus these fields; an event
 * has none of them. A reply is an entry of the caller's reply stream.
 */
export const RPC_FIELDS = {
  /** Request: the stream the reply goes to (one per client instance). */
  replyTo: 'rpc_reply',
  /** Request and reply: the correlation id of the call. */
  correlation: 'rpc_corr',
  /** Request: the caller's deadline (ms since the epoch); past it the request is acked unrun. */
  deadline: 'rpc_deadline',
  /** Request: the expiry (ms) the reply stream is given with each reply. */
  replyTtl: 'rpc_ttl',
  /** Reply: the handler's value, JSON (absent: `undefined`). */
  data: 'rpc_data',
  /** Reply: the error value, JSON (absent: a value reply). */
  error: 'rpc_err',
  /** Reply with `rpc_err`: why ({@link RpcErrorReason}). */
  reason: 'rpc_reason',
} as const;

const REQUEST_FIELDS: ReadonlySet<string> = new Set([
  RPC_FIELDS.replyTo,
  RPC_FIELDS.correlation,
  RPC_FIELDS.deadline,
  RPC_FIELDS.replyTtl,
]);

/** How far a reply stream is trimmed (`MAXLEN ~`): replies are read as they come. */
export const REPLY_STREAM_MAX_LEN = 1000;

/** Where a request's reply goes. */
export interface ReplyAddress {
  stream: string;
  correlationId: string;
  /** The caller's deadline, ms since the epoch. */
  deadline: number;
  /** The expiry of the reply stream (ms). */
  ttlMs: number;
}

/**
 * A request of a pattern's stream, decoded: the payload, and where its reply goes. An event decodes
 * to its payload alone (see {@link envelopeCodec}).
 */
export class RequestEnvelope {
  constructor(
    readonly payload: unknown,
    readonly reply: ReplyAddress,
  ) {}
}

/** The request fields appended to the producer's fields. */
export function requestFields(address: ReplyAddress): string[] {
  return [
    RPC_FIELDS.replyTo,
    address.stream,
    RPC_FIELDS.correlation,
    address.correlationId,
    RPC_FIELDS.deadline,
    String(address.deadline),
    RPC_FIELDS.replyTtl,
    String(address.ttlMs),
  ];
}

/** The reply address of an entry's fields; `undefined` for an event. */
export function replyAddressOf(fields: Readonly<Record<string, string>>): ReplyAddress | undefined {
  const stream = fields[RPC_FIELDS.replyTo];
  const correlationId = fields[RPC_FIELDS.correlation];
  if (!stream || !correlationId) return undefined;
  const deadline = Number(fields[RPC_FIELDS.deadline]);
  const ttlMs = Number(fields[RPC_FIELDS.replyTtl]);
  return {
    stream,
    correlationId,
    deadline: Number.isFinite(deadline) ? deadline : Number.POSITIVE_INFINITY,
    ttlMs: Number.isInteger(ttlMs) && ttlMs > 0 ? ttlMs : 60_000,
  };
}

/**
 * The codec of a pattern's loop: an event decodes to its payload as the handler's codec decodes
 * it, so it reaches the handler with no copy of its message; a request to a
 * {@link RequestEnvelope}, its request fields taken out before the handler's codec reads the rest.
 */
export function envelopeCodec(inner: StreamCodec<unknown>): StreamCodec<unknown> {
  return {
    encode(value: unknown): Record<string, string> {
      return inner.encode(value instanceof RequestEnvelope ? value.payload : value);
    },
    decode(fields: Record<string, string>): unknown {
      const reply = replyAddressOf(fields);
      if (!reply) return inner.decode(fields);
      const rest: Record<string, string> = {};
      for (const [key, value] of Object.entries(fields))
        if (!REQUEST_FIELDS.has(key)) rest[key] = value;
      return new RequestEnvelope(inner.decode(rest), reply);
    },
  };
}

/** What a reply carries. */
export type ReplyBody =
  { kind: 'value'; value: unknown } | { kind: 'error'; error: unknown; reason: RpcErrorReason };

/**
 * A reply's fields. A value JSON cannot write (a BigInt, a cycle) becomes an `'unserializable'`
 * error reply.
 */
export function replyFields(correlationId: string, body: ReplyBody): string[] {
  const head = [RPC_FIELDS.correlation, correlationId];
  if (body.kind === 'value') {
    let json: string | undefined;
    try {
      json = JSON.stringify(body.value);
    } catch (err) {
      return replyFields(correlationId, {
        kind: 'error',
        error: { status: 'error', message: `reply not serializable: ${String(err)}` },
        reason: 'unserializable',
      });
    }
    return json === undefined ? head : [...head, RPC_FIELDS.data, json];
  }
  let error: string;
  try {
    error = JSON.stringify(body.error) ?? 'null';
  } catch {
    error = JSON.stringify({ status: 'error', message: String(body.error) });
  }
  return [...head, RPC_FIELDS.error, error, RPC_FIELDS.reason, body.reason];
}

/** A reply read back: its correlation id and body; `undefined` for an entry that is none. */
export function parseReply(
  flat: readonly string[],
): { correlationId: string; body: ReplyBody } | undefined {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
  const correlationId = fields[RPC_FIELDS.correlation];
  if (!correlationId) return undefined;
  const parse = (text: string | undefined): unknown => {
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  };
  if (fields[RPC_FIELDS.error] !== undefined) {
    return {
      correlationId,
      body: {
        kind: 'error',
        error: parse(fields[RPC_FIELDS.error]),
        reason: (fields[RPC_FIELDS.reason] ?? 'rpc') as RpcErrorReason,
      },
    };
  }
  return { correlationId, body: { kind: 'value', value: parse(fields[RPC_FIELDS.data]) } };
}
