import {
  Inject,
  Injectable,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  Optional,
} from '@nestjs/common';
import { encodeEntry, errorText } from '../codec/codecs';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import type { ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamReplicationError } from '../errors/echo-stream-replication.error';
import type {
  PublishManyOptions,
  PublishOptions,
  PublishReceipt,
} from '../interfaces/publish.interface';
import type { ReplicatedWrite } from '../redis/stream-roles';
import { loadOtel } from '../tracing/otel-api';
import { ProducerTracing } from '../tracing/producer-tracing';
import { brandedId } from '../codec/branded-id';
import { DurablePublishLink } from '../runtime/durable-publish-link';
import { describeValue as describe } from '../config/describe-value';
import { publishWithin } from './publish-deadline';
import { PartitionRouter, type KeyedTarget } from './partition-router';
import {
  checkIds,
  checkOptions,
  checkStream,
  PUBLISH_MANY_OPTION_NAMES,
  PUBLISH_OPTION_NAMES,
  type CheckedOptions,
  type Durability,
} from './publish-options';

/** `idempotencyWindowMs` when the producer is built without module options. */
const DEFAULT_IDEMPOTENCY_WINDOW_MS = 600_000;

/** The module's idempotent publish settings. */
interface Idempotency {
  /** `producer.idempotent`: the default of a call that does not say. */
  byDefault: boolean;
  windowMs: number;
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
export class StreamProducer implements OnApplicationBootstrap, OnApplicationShutdown {
  /**
   * PRODUCER spans and trace fields, when `@opentelemetry/api` is installed (docs/observability.md
   * "Tracing").
   */
  private readonly tracing: ProducerTracing | undefined;
  /** Where durable publishes (`{ replicas }`) go: a connection of their own, see the class. */
  private readonly durableLink: DurablePublishLink;
  private readonly idempotency: Idempotency;
  /** Keyed publishes of partitioned streams (docs/partitions.md). */
  private readonly router: PartitionRouter;

  constructor(
    private readonly connections: EchoStreamConnections,
    @Optional() @Inject(ECHO_STREAM_OPTIONS) options?: ResolvedModuleOptions,
  ) {
    const otel = loadOtel();
    this.tracing = otel ? new ProducerTracing(otel) : undefined;
    this.durableLink = new DurablePublishLink(
      options,
      () => connections.client,
      options?.serverFeatures,
    );
    this.router = new PartitionRouter(
      () => connections.client.partitions,
      options?.producerPartitions,
    );
    this.idempotency = {
      byDefault: options?.idempotentPublish ?? false,
      windowMs: options?.idempotencyWindowMs ?? DEFAULT_IDEMPOTENCY_WINDOW_MS,
    };
  }

  /**
   * Stores the `producer.partitions` counts unless stored; a stored count that differs fails
   * bootstrap (docs/partitions.md "Partition count").
   */
  async onApplicationBootstrap(): Promise<void> {
    await this.router.checkConfigured();
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
    const idempotent = this.isIdempotent(checked);
    const given = opts?.id;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new TypeError(
        `StreamProducer.publish(): option 'id' must be a non-empty string, got ${describe(given)}`,
      );
    }
    const id = given ?? brandedId();
    const keyed = await this.keyed('publish', stream, opts);
    const encoded = encodeEntry(codec, id, payload);
    const fields = keyed ? encoded.concat(keyed.keyFields) : encoded;
    const target = keyed?.stream ?? stream;
    const write = (extra: readonly string[]): Promise<string> => {
      const withTrace = extra.length > 0 ? fields.concat(extra) : fields;
      if (idempotent) {
        return this.writeIdempotently('publish', target, [id], [withTrace], maxLen, durable).then(
          (got) => got[0],
        );
      }
      if (durable) {
        const items = [{ stream: target, fields: withTrace, maxLen }];
        return this.writeDurably('publish', target, [id], durable, (client) =>
          client.addReplicated(items, durable.replicas, durable.timeoutMs),
        ).then((got) => got[0]);
      }
      const { client, publishTimeoutMs } = this.connections;
      return publishWithin(
        client.link,
        publishTimeoutMs,
        { method: 'publish', stream: target, ids: [id] },
        () => client.add(target, withTrace, maxLen),
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
    const idempotent = this.isIdempotent(checked);
    const given = checkIds(opts?.ids, payloads.length);
    if (payloads.length === 0) return [];
    const ids = given ?? payloads.map(() => brandedId());
    const keyed = await this.keyed('publishMany', stream, opts);
    const target = keyed?.stream ?? stream;
    const encoded = payloads.map((payload, i) => {
      const fields = encodeEntry(codec, ids[i], payload);
      return keyed ? fields.concat(keyed.keyFields) : fields;
    });
    const write = async (trace: readonly string[]): Promise<PublishReceipt[]> => {
      const items = encoded.map((fields) => ({
        stream: target,
        fields: trace.length > 0 ? fields.concat(trace) : fields,
        maxLen,
      }));
      let entryIds: string[];
      if (idempotent) {
        const fields = items.map((item) => item.fields);
        entryIds = await this.writeIdempotently(
          'publishMany',
          target,
          ids,
          fields,
          maxLen,
          durable,
        );
      } else if (durable) {
        entryIds = await this.writeDurably('publishMany', target, ids, durable, (client) =>
          client.addReplicated(items, durable.replicas, durable.timeoutMs),
        );
      } else {
        const { client, publishTimeoutMs } = this.connections;
        entryIds = await publishWithin(
          client.link,
          publishTimeoutMs,
          { method: 'publishMany', stream: target, ids },
          () => client.addMany(items),
        );
      }
      return ids.map((id, i) => ({ id, entryId: entryIds[i] }));
    };
    return this.tracing ? this.tracing.send(stream, payloads.length, write) : write([]);
  }

  /** A keyed publish: its partition stream and key field; `undefined` without `key`. */
  private keyed(
    method: string,
    stream: string,
    opts: PublishManyOptions | undefined,
  ): Promise<KeyedTarget> | undefined {
    if (opts?.key === undefined) return undefined;
    return this.router.route(method, stream, opts.key, opts.partitions);
  }

  /** Whether this call publishes idempotently: its own option, else the module's default. */
  private isIdempotent(checked: CheckedOptions): boolean {
    return checked.idempotent ?? this.idempotency.byDefault;
  }

  /**
   * The entries written by one script call that writes each branded id once per
   * `idempotencyWindowMs` (docs/publishing.md "Idempotent publish"), within `publishTimeoutMs`;
   * a repeat answers the entry id of the first write. With `durable`, the script call and its
   * WAIT go as one pipeline on the durable publishes' connection (see `writeDurably`).
   */
  private writeIdempotently(
    method: 'publish' | 'publishMany',
    stream: string,
    ids: readonly string[],
    fields: ReadonlyArray<readonly string[]>,
    maxLen: number | undefined,
    durable: Durability | undefined,
  ): Promise<string[]> {
    const items = ids.map((id, i) => ({ id, fields: fields[i] }));
    const { windowMs } = this.idempotency;
    if (durable) {
      return this.writeDurably(method, stream, ids, durable, (client) =>
        client.addIdempotentReplicated(
          stream,
          items,
          windowMs,
          maxLen,
          durable.replicas,
          durable.timeoutMs,
        ),
      );
    }
    const { client, publishTimeoutMs } = this.connections;
    return publishWithin(client.link, publishTimeoutMs, { method, stream, ids }, async () => {
      const got = await client.addIdempotent(stream, items, windowMs, maxLen);
      return got.map((answer) => answer.entryId);
    });
  }

  /**
   * The writes of `send` and `WAIT replicas timeoutMs` in one pipeline, on the durable publishes'
   * own connection, within `publishTimeoutMs` + `replicaTimeoutMs` in all (the server holds the
   * reply up to `replicaTimeoutMs` on purpose). Fewer replicas than asked:
   * EchoStreamReplicationError, naming the entries that ARE written.
   */
  private async writeDurably(
    method: 'publish' | 'publishMany',
    stream: string,
    ids: readonly string[],
    durable: Durability,
    send: (client: DurablePublishLink['streams']) => Promise<ReplicatedWrite>,
  ): Promise<string[]> {
    const client = this.durableLink.streams;
    const written: ReplicatedWrite = await publishWithin(
      client.link,
      this.connections.publishTimeoutMs,
      { method, stream, ids },
      () => send(client),
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
