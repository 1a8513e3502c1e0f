import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { brandedId } from '../codec/branded-id';
import { encodeEntry, errorText, resolveCodec } from '../codec/codecs';
import { EchoStreamRpcError } from '../errors/echo-stream-rpc.error';
import { EchoStreamRpcTimeoutError } from '../errors/echo-stream-rpc-timeout.error';
import type { StreamCodec } from '../interfaces/codec.interface';
import { publishWithin } from '../producer/publish-deadline';
import { StreamProducer } from '../producer/stream-producer.service';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ConnectionListeners, type EchoStreamConnectionEvents } from './link-status';
import {
  resolveClientOptions,
  type EchoStreamClientOptions,
  type ResolvedClientOptions,
} from './microservice-options';
import { EchoStreamRecord } from './echo-stream.record-builder';
import { ReplyReader } from './reply-reader';
import { answerText } from './rpc-verdict';
import { requestFields, type ReplyBody } from './rpc-wire';

/** What `connect()` opened. */
interface Running {
  connections: EchoStreamConnections;
  producer: StreamProducer;
  /** The reply stream's blocking reads, on a connection of their own. */
  replies: ReplyReader;
  closeReads: () => Promise<void>;
  renew: NodeJS.Timeout;
}

/**
 * A Nest `ClientProxy` for `EchoStreamServer` (`ClientsModule.register([{ name, customClass:
 * EchoStreamClient, options }])`): `emit(pattern, data)` appends an entry to the pattern's stream
 * in the producer's wire format and completes once it is written; `send(pattern, data)` appends a
 * request (reply stream, correlation id, deadline) and answers the handler's value, read from this
 * client's own reply stream. A handler's error answer errors the call with `EchoStreamRpcError`,
 * no reply within `timeoutMs` with `EchoStreamRpcTimeoutError`.
 *
 * Its `status` emits the values of `EchoStreamStatus`, typed `string` as Nest's
 * `ClientProxy` default: `ClientsModule`'s `customClass` takes a `Type<ClientProxy>`, which a
 * narrower status type does not satisfy.
 */
export class EchoStreamClient extends ClientProxy<EchoStreamConnectionEvents> {
  private readonly options: ResolvedClientOptions;
  private readonly codec: StreamCodec<unknown>;
  private readonly logger = new Logger(EchoStreamClient.name);
  /** This client's reply stream (one per instance). */
  readonly replyStream: string;
  private running: Running | undefined;
  private closing: Promise<void> | undefined;
  private readonly listeners = new ConnectionListeners();

  /** @throws EchoStreamConfigError on a bad option. */
  constructor(options: EchoStreamClientOptions = {}) {
    super();
    this.options = resolveClientOptions(options);
    this.codec = resolveCodec(this.options.module.defaults.codec ?? 'json');
    this.replyStream = `echo-stream:replies:${this.options.module.consumerName}:${randomUUID()}`;
  }

  /** Opens the connections and starts reading replies (idempotent; `send` and `emit` call it). */
  async connect(): Promise<void> {
    if (this.closing) await this.closing;
    this.open();
  }

  private open(): Running {
    if (this.running) return this.running;
    const { module, replyTtlMs } = this.options;
    const connections = new EchoStreamConnections(module);
    const readClient = connections.createReadClient();
    const replies = new ReplyReader(this.replyStream, readClient.browser(), this.logger);
    const renew = setInterval(
      () =>
        void connections.client
          .expire(this.replyStream, replyTtlMs)
          .catch((err: unknown) => this.logger.debug(`Reply stream expiry: ${errorText(err)}`)),
      Math.max(1, Math.floor(replyTtlMs / 3)),
    );
    renew.unref();
    this.running = {
      connections,
      producer: new StreamProducer(connections, module),
      replies,
      closeReads: async () => {
        const stopped = replies.stop();
        // the parked XREAD holds its connection up to its BLOCK: drop it rather than wait
        readClient.unwrap().disconnect();
        await stopped;
        await readClient.close();
      },
      renew,
    };
    this.listeners.attach(
      connections.client.unwrap(),
      (status) => this._status$.next(status),
      () => this.closing !== undefined,
    );
    replies.start();
    return this.running;
  }

  /**
   * Stops reading replies (calls still waiting get their timeout) and closes the connections;
   * `connect()` (or the next call) opens them again. Idempotent while it runs.
   */
  close(): Promise<void> {
    this.closing ??= this.shut().finally(() => (this.closing = undefined));
    return this.closing;
  }

  private async shut(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    this.listeners.detach();
    if (!running) return;
    clearInterval(running.renew);
    await running.closeReads();
    await running.producer.onApplicationShutdown();
    await running.connections.onApplicationShutdown();
    this._status$.next('disconnected');
  }

  /** The shared ioredis connection (a `Redis` or a `Cluster`), once connected. */
  unwrap<T>(): T {
    if (!this.running) throw new Error('Not initialized. Please call the "connect" method first.');
    return this.running.connections.client.unwrap() as T;
  }

  /** Listens to an event of the shared connection (ioredis's); before `connect()`, once it opens it. */
  override on<
    EventKey extends keyof EchoStreamConnectionEvents = keyof EchoStreamConnectionEvents,
    EventCallback extends EchoStreamConnectionEvents[EventKey] =
      EchoStreamConnectionEvents[EventKey],
  >(event: EventKey, callback: EventCallback): void {
    this.listeners.add(event, callback as (...args: unknown[]) => void);
  }

  /** `emit()`: one entry in the pattern's stream, as `StreamProducer.publish()` writes it. */
  protected async dispatchEvent<T = unknown>(packet: ReadPacket): Promise<T> {
    const stream = this.streamOf(packet.pattern);
    const codec = this.options.module.defaults.codec;
    const record = packet.data instanceof EchoStreamRecord ? packet.data : undefined;
    await this.open().producer.publish(stream, record ? record.data : packet.data, {
      ...(codec ? { codec } : {}),
      ...record?.options,
    });
    return undefined as T;
  }

  /** `send()`: the request written, its reply (or its timeout) handed to `callback`. */
  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const correlationId = randomUUID();
    const { timeoutMs, replyTtlMs } = this.options;
    const pattern = String(packet.pattern);
    let stream: string;
    try {
      stream = this.streamOf(packet.pattern);
    } catch (err) {
      callback({ err });
      return () => undefined;
    }
    const record = packet.data instanceof EchoStreamRecord ? packet.data : undefined;
    if (record?.options.key !== undefined) {
      callback({ err: new TypeError('EchoStreamClient.send(): a record key is for emit() only') });
      return () => undefined;
    }
    const running = this.open();
    let done = false;
    // the call is over (answered, timed out, or disposed by Nest): nothing reaches it after
    const stop = (): void => {
      done = true;
      clearTimeout(timer);
      stopWaiting();
    };
    const finish = (answer: WritePacket): void => {
      if (done) return;
      stop();
      callback(answer);
    };
    const timer = setTimeout(
      () =>
        finish({
          err: new EchoStreamRpcTimeoutError(
            `EchoStreamClient.send('${stream}'): no reply within ${timeoutMs} ms (timeoutMs)`,
            { pattern, correlationId, timeoutMs },
          ),
        }),
      timeoutMs,
    );
    const stopWaiting = running.replies.expect(correlationId, (body) =>
      finish(this.answer(pattern, stream, correlationId, body)),
    );
    const id = record?.options.id ?? brandedId();
    const fields = encodeEntry(this.codec, id, record ? record.data : packet.data).concat(
      requestFields({
        stream: this.replyStream,
        correlationId,
        deadline: Date.now() + timeoutMs,
        ttlMs: replyTtlMs,
      }),
    );
    const { client } = running.connections;
    // within publishTimeoutMs, as a publish: an error names the call `StreamProducer.send()`
    publishWithin(
      client.link,
      this.options.module.publishTimeoutMs,
      { method: 'send', stream, ids: [id] },
      () => client.add(stream, fields),
    ).catch((err: unknown) => finish({ err }));
    return stop;
  }

  private answer(
    pattern: string,
    stream: string,
    correlationId: string,
    body: ReplyBody,
  ): WritePacket {
    if (body.kind === 'value') return { response: body.value, isDisposed: true };
    return {
      err: new EchoStreamRpcError(
        `EchoStreamClient.send('${stream}'): ${body.reason === 'rpc' ? 'the handler answered' : body.reason}: ${answerText(body.error)}`,
        { pattern, correlationId, reason: body.reason, error: body.error },
      ),
    };
  }

  /** The stream of a pattern: a string pattern, through `streamOf`. */
  private streamOf(pattern: unknown): string {
    if (typeof pattern !== 'string')
      throw new TypeError(
        `EchoStreamClient: a pattern names a stream and must be a string, got ${typeof pattern}`,
      );
    return this.options.streamOf(pattern);
  }
}
