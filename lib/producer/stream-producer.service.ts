import { Injectable } from '@nestjs/common';
import { encodeEntry, resolveCodec } from '../codec/codecs';
import { EchoStreamConnections } from '../echo-stream.connections';
import type { StreamCodec } from '../interfaces/codec.interface';
import type {
  PublishManyOptions,
  PublishOptions,
  PublishReceipt,
} from '../interfaces/publish.interface';
import { loadOtel } from '../tracing/otel-api';
import { ProducerTracing } from '../tracing/producer-tracing';
import { brandedId } from './branded-id';
import { publishWithin } from './publish-deadline';

const PUBLISH_OPTION_NAMES: readonly string[] = ['maxLen', 'codec', 'id'];
const PUBLISH_MANY_OPTION_NAMES: readonly string[] = ['maxLen', 'codec'];

/** Arguments checked and resolved, before anything is minted or written. */
interface CheckedOptions {
  maxLen: number | undefined;
  codec: StreamCodec<unknown>;
}

/**
 * Writes entries in the wire format of SPEC §5: an `id` field with a branded id (the consumers'
 * dedup key) and the codec's fields (`data` = JSON text with the default `'json'` codec).
 *
 * Ids come from the process-wide branded id generator, so every receipt of this process is
 * strictly increasing in publish order.
 */
@Injectable()
export class StreamProducer {
  /** PRODUCER spans and trace fields, when `@opentelemetry/api` is installed (SPEC §10). */
  private readonly tracing: ProducerTracing | undefined;

  constructor(private readonly connections: EchoStreamConnections) {
    const otel = loadOtel();
    this.tracing = otel ? new ProducerTracing(otel) : undefined;
  }

  /**
   * Appends one entry to `stream` (`XADD stream [MAXLEN ~ n] * id <id> ...fields`).
   * @returns the branded id written and the entry id the server assigned.
   * @throws TypeError (as a rejection, nothing written) on a bad stream name, option or payload
   *   the codec cannot encode.
   * @throws EchoStreamPublishError (as a rejection) when Redis is unreachable or does not answer
   *   within `publishTimeoutMs`; its `written` says whether the entry may be in the stream.
   */
  async publish<T>(stream: string, payload: T, opts?: PublishOptions): Promise<PublishReceipt> {
    checkStream('publish', stream);
    const { maxLen, codec } = checkOptions('publish', opts, PUBLISH_OPTION_NAMES);
    const given = opts?.id;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0)) {
      throw new TypeError(
        `StreamProducer.publish(): option 'id' must be a non-empty string, got ${describe(given)}`,
      );
    }
    const id = given ?? brandedId();
    const fields = encodeEntry(codec, id, payload);
    const { client, publishTimeoutMs } = this.connections;
    const write = (extra: readonly string[]): Promise<string> =>
      publishWithin(client.link, publishTimeoutMs, { method: 'publish', stream, ids: [id] }, () =>
        client.add(stream, extra.length > 0 ? fields.concat(extra) : fields, maxLen),
      );
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
   *   within `publishTimeoutMs`.
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
    const { maxLen, codec } = checkOptions('publishMany', opts, PUBLISH_MANY_OPTION_NAMES);
    if (payloads.length === 0) return [];
    const ids = payloads.map(() => brandedId());
    const encoded = payloads.map((payload, i) => encodeEntry(codec, ids[i], payload));
    const { client, publishTimeoutMs } = this.connections;
    const write = async (trace: readonly string[]): Promise<PublishReceipt[]> => {
      const items = encoded.map((fields) => ({
        stream,
        fields: trace.length > 0 ? fields.concat(trace) : fields,
        maxLen,
      }));
      const entryIds = await publishWithin(
        client.link,
        publishTimeoutMs,
        { method: 'publishMany', stream, ids },
        () => client.addMany(items),
      );
      return ids.map((id, i) => ({ id, entryId: entryIds[i] }));
    };
    return this.tracing ? this.tracing.send(stream, payloads.length, write) : write([]);
  }
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
  if (opts === undefined) return { maxLen: undefined, codec: resolveCodec('json') };
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
  return { maxLen, codec };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
