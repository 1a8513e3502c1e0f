import { resolveCodec } from '../codec/codecs';
import { describeValue as describe } from '../config/describe-value';
import type { StreamCodec } from '../interfaces/codec.interface';
import type { PublishManyOptions } from '../interfaces/publish.interface';

// The checks of publish/publishMany arguments: every bad input is a TypeError naming the method,
// the option and the value, thrown before anything is minted or written.

/** `replicaTimeoutMs` when `replicas` is given without it (docs/scale.md "Durable publish"). */
const DEFAULT_REPLICA_TIMEOUT_MS = 1000;
/** The longest `replicaTimeoutMs` accepted: 10 minutes. */
const MAX_REPLICA_TIMEOUT_MS = 600_000;

const WRITE_OPTION_NAMES: readonly string[] = [
  'maxLen',
  'codec',
  'replicas',
  'replicaTimeoutMs',
  'idempotent',
  'key',
  'partitions',
];
export const PUBLISH_MANY_OPTION_NAMES: readonly string[] = [...WRITE_OPTION_NAMES, 'ids'];
export const PUBLISH_OPTION_NAMES: readonly string[] = [...WRITE_OPTION_NAMES, 'id'];

/** Arguments checked and resolved, before anything is minted or written. */
export interface CheckedOptions {
  maxLen: number | undefined;
  codec: StreamCodec<unknown>;
  /** `{ replicas, replicaTimeoutMs }` when the call waits for replicas (replicas >= 1). */
  durable: Durability | undefined;
  /** The call's own `idempotent`, if it gave one. */
  idempotent: boolean | undefined;
}

/** A durable publish's `WAIT numreplicas timeout`. */
export interface Durability {
  replicas: number;
  timeoutMs: number;
}

export function checkStream(method: string, stream: unknown): void {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError(
      `StreamProducer.${method}(): stream must be a non-empty string, got ${describe(stream)}`,
    );
  }
}

export function checkOptions(
  method: string,
  opts: PublishManyOptions | undefined,
  known: readonly string[],
): CheckedOptions {
  if (opts === undefined) {
    return {
      maxLen: undefined,
      codec: resolveCodec('json'),
      durable: undefined,
      idempotent: undefined,
    };
  }
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
    throw new TypeError(
      `StreamProducer.${method}(): options must be an object, got ${describe(opts)}`,
    );
  }
  for (const key of Object.keys(opts)) {
    if (!known.includes(key)) {
      throw new TypeError(
        `StreamProducer.${method}(): unknown option '${key}' (known: ${known.join(', ')})`,
      );
    }
  }
  const { maxLen } = opts;
  if (
    maxLen !== undefined &&
    (typeof maxLen !== 'number' || !Number.isSafeInteger(maxLen) || maxLen < 0)
  ) {
    throw new TypeError(
      `StreamProducer.${method}(): option 'maxLen' must be an integer >= 0, got ${describe(maxLen)}`,
    );
  }
  let codec: StreamCodec<unknown>;
  try {
    codec = resolveCodec(opts.codec ?? 'json');
  } catch (err) {
    throw new TypeError(`StreamProducer.${method}(): ${(err as Error).message}`);
  }
  const { idempotent } = opts;
  if (idempotent !== undefined && typeof idempotent !== 'boolean') {
    throw new TypeError(
      `StreamProducer.${method}(): option 'idempotent' must be a boolean, got ${describe(idempotent)}`,
    );
  }
  return { maxLen, codec, durable: checkDurability(method, opts), idempotent };
}

/** `publishMany`'s `ids`: one non-empty string per payload; `undefined` when absent. */
export function checkIds(ids: unknown, count: number): readonly string[] | undefined {
  if (ids === undefined) return undefined;
  if (!Array.isArray(ids) || ids.length !== count) {
    throw new TypeError(
      `StreamProducer.publishMany(): option 'ids' must be an array of ${count} id(s), one per ` +
        `payload, got ${Array.isArray(ids) ? `${ids.length} id(s)` : describe(ids)}`,
    );
  }
  ids.forEach((id: unknown, i) => {
    if (typeof id !== 'string' || id.length === 0) {
      throw new TypeError(
        `StreamProducer.publishMany(): option 'ids' must hold non-empty strings, got ` +
          `${describe(id)} at index ${i}`,
      );
    }
  });
  return ids as readonly string[];
}

/** `replicas` / `replicaTimeoutMs`: `undefined` when the call does not wait (absent or 0). */
function checkDurability(method: string, opts: PublishManyOptions): Durability | undefined {
  const { replicas, replicaTimeoutMs } = opts;
  if (
    replicas !== undefined &&
    (typeof replicas !== 'number' || !Number.isSafeInteger(replicas) || replicas < 0)
  ) {
    throw new TypeError(
      `StreamProducer.${method}(): option 'replicas' must be an integer >= 0 (0: do not wait), ` +
        `got ${describe(replicas)}`,
    );
  }
  if (replicaTimeoutMs !== undefined) {
    if (
      typeof replicaTimeoutMs !== 'number' ||
      !Number.isSafeInteger(replicaTimeoutMs) ||
      replicaTimeoutMs < 1 ||
      replicaTimeoutMs > MAX_REPLICA_TIMEOUT_MS
    ) {
      // WAIT's 0 means "forever": a publish must end, so 0 is refused
      throw new TypeError(
        `StreamProducer.${method}(): option 'replicaTimeoutMs' must be an integer from 1 to ` +
          `${MAX_REPLICA_TIMEOUT_MS} (ms), got ${describe(replicaTimeoutMs)}`,
      );
    }
    if (replicas === undefined) {
      throw new TypeError(
        `StreamProducer.${method}(): option 'replicaTimeoutMs' (${replicaTimeoutMs}) needs ` +
          `option 'replicas' (how many replicas to wait for)`,
      );
    }
  }
  if (replicas === undefined || replicas === 0) return undefined;
  return { replicas, timeoutMs: replicaTimeoutMs ?? DEFAULT_REPLICA_TIMEOUT_MS };
}
