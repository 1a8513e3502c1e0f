import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { encodeEntry, errorText, resolveCodec } from '../codec/codecs';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import type { ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamReplicationError } from '../errors/echo-stream-replication.error';
import type { StreamCodec } from '../interfaces/codec.interface';
import type {
  PublishManyOptions,
  PublishOptions,
  PublishReceipt,
} from '../interfaces/publish.interface';
import type { ReplicatedWrite } from '../redis/stream-roles';
import { loadOtel } from '../tracing/otel-api';
import { ProducerTracing } from '../tracing/producer-tracing';
import { brandedId } from './branded-id';
import { DurablePublishLink } from '../runtime/durable-publish-link';
import { publishWithin } from './publish-deadline';

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
];
const PUBLISH_MANY_OPTION_NAMES: readonly string[] = [...WRITE_OPTION_NAMES, 'ids'];
const PUBLISH_OPTION_NAMES: readonly string[] = [...WRITE_OPTION_NAMES, 'id'];

/** `idempotencyWindowMs` when the producer is built without module options. */
const DEFAULT_IDEMPOTENCY_WINDOW_MS = 600_000;

/** Arguments checked and resolved, before anything is minted or written. */
interface CheckedOptions {
  maxLen: number | undefined;
  codec: StreamCodec<unknown>;
  /** `{ replicas, replicaTimeoutMs }` when the call waits for replicas (replicas >= 1). */
  durable: Durability | undefined;
  /** The call's own `idempotent`, if it gave one. */
  idempotent: boolean | undefined;
}

/** The module's idempotent publish settings. */
interface Idempotency {
  /** `producer.idempotent`: the default of a call that does not say. */
  byDefault: boolean;
  windowMs: number;
}

/** A durable publish's `WAIT numreplicas timeout`. */
interface Durability {
  replicas: number;
  timeoutMs: number;
}

/**
 * Writes entries in the wire format (docs/publishing.md "Wire format"): an `id` field with a
 * branded id (the consumers' dedup key) and the codec's fields (`data` = JSON text with the default
 * `'json'` codec).
 *
 * Ids come from the process-wide branded id generator, so every receipt of this process is
 * strictly increasing in publish order.
 */
@Injectable()
export class StreamProducer implements OnApplicationShutdown {
  /**
   * PRODUCER spans and trace fields, when `@opentelemetry/api` is installed (docs/observability.md
   * "Tracing").
   */
  private readonly tracing: ProducerTracing | undefined;
  /** Where durable publishes (`{ replicas }`) go: a connection of their own, see the class. */
  private readonly durableLink: DurablePublishLink;
  private readonly idempotency: Idempotency;

  constructor(
    private readonly connections: EchoStreamConnections,
    @Optional() @Inject(ECHO_STREAM_OPTIONS) options?: ResolvedModuleOptions,
  ) {
    const otel = loadOtel();
    this.tracing = otel ? new ProducerTracing(otel) : undefined;
    this.durableLink = new DurablePublishLink(options, () => connections.client);
    this.idempotency = {
      byDefault: options?.idempotentPublish ?? false,
      windowMs: options?.idempotencyWindowMs ?? DEFAULT_IDEMPOTENCY_WINDOW_MS,
    };
  }

  /** Closes the durable publishes' connection, if one was opened. */
  async onApplicationShutdown(): Promise<void> {
    await this.durableLink.close();
  }

  /**
   * Appends one entry to `stream` (`XADD stream [MAXLEN ~ n] * id <id> ...fields`).
   * @returns the branded id written and the entry id the server assigned.
   * @throws TypeError (as a rejection, nothing written) on a bad stream name, option or payload
   *   the codec cannot encode.
   * @throws EchoStreamPublishError (as a rejection) when Redis is unreachable or does not answer
   *   within `publishTimeoutMs` (+ `replicaTimeoutMs` with `replicas`); its `written` says whether
   *   the entry may be in the stream.
   * @throws EchoStreamReplicationError (as a rejection) with `replicas`, when fewer replicas
   *   acknowledged the entry within `replicaTimeoutMs`: the entry IS in the stream.
   */
  async publish<T>(stream: string, payload: T, opts?: PublishOptions): Promise<PublishReceipt> {
    checkStream('publish', stream);
    const checked = checkOptions('publish', opts, PUBLISH_OPTION_NAMES);
    const { maxLen, codec, durable } = checked;
    const idempotent = this.isIdempotent('publish', checked);
    const given = opts?.id;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new TypeError(
        `StreamProducer.publish(): option 'id' must be a non-empty string, got ${describe(given)}`,
      );
    }
    const id = given ?? brandedId();
    const fields = encodeEntry(codec, id, payload);
    const write = (extra: readonly string[]): Promise<string> => {
      const withTrace = extra.length > 0 ? fields.concat(extra) : fields;
      if (idempotent) {
        return this.writeIdempotently('publish', stream, [id], [withTrace], maxLen).then(
          (got) => got[0],
        );
      }
      if (durable) {
        const items = [{ stream, fields: withTrace, maxLen }];
        return this.writeDurably('publish', stream, [id], items, durable).then((got) => got[0]);
      }
      const { client, publishTimeoutMs } = this.connections;
      return publishWithin(
        client.link,
        publishTimeoutMs,
        { method: 'publish', stream, ids: [id] },
        () => client.add(stream, withTrace, maxLen),
      );
    };
    if (!this.tracing) return { id, entryId: await write([]) };
    const [receipt] = await this.tracing.send(stream, 1, async (trace) => [
      { id, entryId: await write(trace) },
    ]);
    return receipt;
  }

  /**
   * Appends one entry per payload to `stream`, pipelined (one round trip). Every payload is
   * encoded before anything is sent, so a payload the codec rejects writes nothing. Not atomic:
   * when the server fails part-way, the entries before the failure stay written.
   * @returns one receipt per payload, in order (branded ids strictly increasing).
   * @throws TypeError (as a rejection, nothing written) on a bad stream name, option or payload.
   * @throws EchoStreamPublishError (as a rejection) when Redis is unreachable or does not answer
   *   within `publishTimeoutMs` (+ `replicaTimeoutMs` with `replicas`).
   * @throws EchoStreamReplicationError (as a rejection) with `replicas`, when fewer replicas
   *   acknowledged the entries within `replicaTimeoutMs`: the entries ARE in the stream.
   */
  async publishMany<T>(
    stream: string,
    payloads: readonly T[],
    opts?: PublishManyOptions,
  ): Promise<PublishReceipt[]> {
    checkStream('publishMany', stream);
    if (!Array.isArray(payloads)) {
      throw new TypeError(
        `StreamProducer.publishMany(): payloads must be an array, got ${describe(payloads)}`,
      );
    }
    const checked = checkOptions('publishMany', opts, PUBLISH_MANY_OPTION_NAMES);
    const { maxLen, codec, durable } = checked;
    const idempotent = this.isIdempotent('publishMany', checked);
    const given = checkIds(opts?.ids, payloads.length);
    if (payloads.length === 0) return [];
    const ids = given ?? payloads.map(() => brandedId());
    const encoded = payloads.map((payload, i) => encodeEntry(codec, ids[i], payload));
    const write = async (trace: readonly string[]): Promise<PublishReceipt[]> => {
      const items = encoded.map((fields) => ({
        stream,
        fields: trace.length > 0 ? fields.concat(trace) : fields,
        maxLen,
      }));
      let entryIds: string[];
      if (idempotent) {
        const fields = items.map((item) => item.fields);
        entryIds = await this.writeIdempotently('publishMany', stream, ids, fields, maxLen);
      } else if (durable) {
        entryIds = await this.writeDurably('publishMany', stream, ids, items, durable);
      } else {
        const { client, publishTimeoutMs } = this.connections;
        entryIds = await publishWithin(
          client.link,
          publishTimeoutMs,
          { method: 'publishMany', stream, ids },
          () => client.addMany(items),
        );
      }
      return ids.map((id, i) => ({ id, entryId: entryIds[i] }));
    };
    return this.tracing ? this.tracing.send(stream, payloads.length, write) : write([]);
  }

  /** Whether this call publishes idempotently: its own option, else the module's default. */
  private isIdempotent(method: string, checked: CheckedOptions): boolean {
    const idempotent = checked.idempotent ?? this.idempotency.byDefault;
    if (idempotent && checked.durable) {
      throw new TypeError(
        `StreamProducer.${method}(): option 'idempotent' cannot be combined with 'replicas' ` +
          `(publish idempotently, then WAIT separately if needed)`,
      );
    }
    return idempotent;
  }

  /**
   * The entries written by one script call that writes each branded id once per
   * `idempotencyWindowMs` (docs/publishing.md "Idempotent publish"), within `publishTimeoutMs`;
   * a repeat answers the entry id of the first write.
   */
  private writeIdempotently(
    method: 'publish' | 'publishMany',
    stream: string,
    ids: readonly string[],
    fields: ReadonlyArray<readonly string[]>,
    maxLen: number | undefined,
  ): Promise<string[]> {
    const { client, publishTimeoutMs } = this.connections;
    const items = ids.map((id, i) => ({ id, fields: fields[i] }));
    return publishWithin(client.link, publishTimeoutMs, { method, stream, ids }, async () => {
      const got = await client.addIdempotent(stream, items, this.idempotency.windowMs, maxLen);
      return got.map((answer) => answer.entryId);
    });
  }

  /**
   * The XADDs and `WAIT replicas timeoutMs` in one pipeline, on the durable publishes' own
   * connection, within `publishTimeoutMs` + `replicaTimeoutMs` in all (the server holds the reply
   * up to `replicaTimeoutMs` on purpose). Fewer replicas than asked: EchoStreamReplicationError,
   * naming the entries that ARE written.
   */
  private async writeDurably(
    method: 'publish' | 'publishMany',
    stream: string,
    ids: readonly string[],
    items: ReadonlyArray<{ stream: string; fields: readonly string[]; maxLen?: number }>,
    durable: Durability,
  ): Promise<string[]> {
    const client = this.durableLink.streams;
    const written: ReplicatedWrite = await publishWithin(
      client.link,
      this.connections.publishTimeoutMs,
      { method, stream, ids },
      () => client.addReplicated(items, durable.replicas, durable.timeoutMs),
      durable.timeoutMs,
    );
    if (written.acknowledged >= durable.replicas && !written.waitError) return written.entryIds;
    throw replicationError(method, stream, ids, written, durable);
  }
}

function replicationError(
  method: string,
  stream: string,
  ids: readonly string[],
  written: ReplicatedWrite,
  durable: Durability,
): EchoStreamReplicationError {
  const { entryIds, acknowledged, waitError } = written;
  const what =
    entryIds.length === 1
      ? `the entry IS written on the master (entry id ${entryIds[0]}, id ${ids[0]})`
      : `the ${entryIds.length} entries ARE written on the master (entry ids ${listText(entryIds)})`;
  const why = waitError
    ? `WAIT ${durable.replicas} ${durable.timeoutMs} failed (${errorText(waitError)})`
    : `only ${acknowledged} of ${durable.replicas} replica(s) acknowledged within ` +
      `${durable.timeoutMs} ms (replicaTimeoutMs)`;
  return new EchoStreamReplicationError(
    `StreamProducer.${method}() to '${stream}': ${why}; ${what} and will be consumed, but a ` +
      `failover of that master before its replicas catch up may lose it; do not publish it again ` +
      `as a new message (re-publish under the same id if needed: consumers dedup it)`,
    {
      stream,
      ids,
      entryIds,
      replicas: durable.replicas,
      acknowledged,
      timeoutMs: durable.timeoutMs,
    },
    waitError,
  );
}

/** `a, b, c`, or for a long list `500 entries, a ... z`. */
function listText(values: readonly string[]): string {
  if (values.length <= 3) return values.join(', ');
  return `${values[0]} ... ${values[values.length - 1]}`;
}

function checkStream(method: string, stream: unknown): void {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new TypeError(
      `StreamProducer.${method}(): stream must be a non-empty string, got ${describe(stream)}`,
    );
  }
}

function checkOptions(
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
function checkIds(ids: unknown, count: number): readonly string[] | undefined {
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

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
