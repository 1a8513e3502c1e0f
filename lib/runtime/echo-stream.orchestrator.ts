import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { errorText } from '../codec/codecs';
import type { ResolvedHandlerOptions } from '../config/handler-definitions';
import {
  type DeadLetterSink,
  type EntryHandler,
  PauseWatchPool,
  SharedReadPool,
  PartitionedConsumer,
  appPartitionLinks,
  readClaimIdleMs,
  OwnPartitionLinks,
  type PartitionLinks,
  StreamConsumer,
} from '../consumer';
import { EchoStreamConnections } from './echo-stream.connections';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import type {
  DeadLetterDefinition,
  HandlerCalls,
  HandlerDefinition,
  HandlerSource,
} from '../config/handler-definitions';
import { EchoStreamExplorer } from '../discovery/echo-stream.explorer';
import { messages } from '../config/messages';
import type { ResolvedModuleOptions } from '../config/module-options';
import { ConsumerRegistry, type ConsumerLoop } from './echo-stream.registry';
import { checkPartitionCounts } from './partition-counts';
import { checkDeleteOnAckGroups } from './delete-on-ack-checks';
import { HandlerPipelineFactory } from '../handlers/handler-pipeline.factory';
import { ConsumerTracing } from '../tracing/consumer-tracing';
import { loadOtel } from '../tracing/otel-api';
import type { DeadLetterMessage } from '../interfaces/dead-letter-message.interface';
import type { BatchAcks, StreamMessage } from '../interfaces/stream-message.interface';
import type { StreamsClient } from '../redis/stream-roles';

interface PlannedLoop {
  definition: HandlerDefinition;
  options: ResolvedHandlerOptions;
}

/**
 * The connections the loops share while they run (`sharedReads`, docs/scale.md "Many handlers").
 */
interface SharedLoopLinks {
  /** Every loop's commands but its blocking read. */
  commands: StreamsClient;
  /** The blocking reads, one per group (and Cluster slot). */
  reads: SharedReadPool;
  /** The pause flags, one MGET per group (and Cluster slot) per `claimIntervalMs`. */
  pauses: PauseWatchPool | undefined;
}

/**
 * Turns discovered handlers into running consumer loops on application bootstrap and stops them
 * before the application shuts down (internal).
 */
@Injectable()
export class EchoStreamOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EchoStreamOrchestrator.name);
  private planned: PlannedLoop[] | undefined;
  private started = false;
  /** The loops this orchestrator started: the registry may hold others (a hybrid app's transport). */
  private loops: ConsumerLoop[] = [];
  /** The stop in flight, shared by every caller. */
  private stopping: Promise<void> | undefined;
  /** The loops' shared connections while they run (`sharedReads`). */
  private shared: SharedLoopLinks | undefined;
  /** `@opentelemetry/api`, when installed: handler calls then run in CONSUMER spans. */
  private readonly otel = loadOtel();

  /**
   * @param explorer the handlers to run: the explorer's in the module; the microservices
   *   transport (`EchoStreamServer`) builds an orchestrator of its own over its patterns.
   * @param pipelines the call of each handler: the Nest pipeline in the module, Nest's own
   *   handler of the pattern in the transport.
   */
  constructor(
    @Inject(EchoStreamExplorer) private readonly explorer: HandlerSource,
    private readonly registry: ConsumerRegistry,
    private readonly connections: EchoStreamConnections,
    @Inject(HandlerPipelineFactory) private readonly pipelines: HandlerCalls,
    @Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions,
  ) {}

  /**
   * Validates every handler's options (a bad one fails bootstrap), the partition count of each
   * partitioned stream against the stored one and the groups of a `deleteOnAck: true` stream,
   * then starts unless `autoStart: false`.
   */
  async onApplicationBootstrap(): Promise<void> {
    const planned = this.plan();
    // only an app with a partitioned handler opens the shared connection here
    if (planned.some((p) => p.options.partitions !== null))
      await checkPartitionCounts(this.connections.client.partitions, planned);
    if (planned.some((p) => p.options.deleteOnAck === true))
      await checkDeleteOnAckGroups(this.connections.client, planned);
    if (this.options.autoStart) this.start();
  }

  /** Starts one loop per handler (idempotent). */
  start(): void {
    if (this.started) return;
    this.started = true;
    const planned = this.plan();
    if (this.options.sharedReads && planned.length > 0) this.shared = this.openSharedLinks();
    for (const { definition, options } of planned) {
      const consumer = this.createConsumer(definition, options);
      this.loops.push(consumer);
      this.registry.add(consumer);
      consumer.start();
    }
    const count = this.loops.length;
    if (count > 0) {
      this.logger.log(
        `Started ${count} consumer loop(s) as consumer '${this.options.consumerName}'`,
      );
      void this.checkEvictionPolicy();
      void this.reportServerFeatures();
    }
  }

  /**
   * Stops every loop (in parallel, each bounded by `shutdownTimeoutMs`). A call while a stop is in
   * flight (an admin drain, then SIGTERM) gets that same stop: it settles once every loop is down.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopLoops().finally(() => (this.stopping = undefined));
    return this.stopping;
  }

  private async stopLoops(): Promise<void> {
    const consumers = this.loops;
    this.loops = [];
    this.started = false;
    await Promise.all(consumers.map((consumer) => consumer.stop(this.options.shutdownTimeoutMs)));
    this.registry.remove(consumers);
    const shared = this.shared;
    this.shared = undefined;
    if (shared) await Promise.all([shared.reads.close(), shared.commands.close()]);
  }

  private openSharedLinks(): SharedLoopLinks {
    const commands = this.connections.createCommandsClient();
    return {
      commands,
      pauses:
        commands.pauses &&
        new PauseWatchPool(
          commands.pauses,
          (stream) => this.connections.readPartitionOf(stream),
          (text) => this.logger.warn(text),
        ),
      reads: new SharedReadPool({
        openReadClient: () => this.connections.createReadClient(),
        partitionOf: (stream) => this.connections.readPartitionOf(stream),
        consumer: this.options.consumerName,
      }),
    };
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  private plan(): PlannedLoop[] {
    this.planned ??= this.explorer.handlers.map((definition) => ({
      definition,
      options: definition.resolved,
    }));
    return this.planned;
  }

  private createConsumer(
    definition: HandlerDefinition,
    options: ResolvedHandlerOptions,
  ): ConsumerLoop {
    const call = this.pipelines.build(definition, options.batch);
    const handler: EntryHandler = options.batch
      ? {
          batch: true,
          call: call as (messages: StreamMessage<unknown>[]) => BatchAcks | Promise<BatchAcks>,
        }
      : { batch: false, call: call as (message: StreamMessage<unknown>) => unknown };
    const common = {
      stream: definition.stream,
      group: definition.group,
      consumer: this.options.consumerName,
      handlerName: definition.name,
      options,
      handler,
      deadLetters: deadLetterSink(
        this.explorer.deadLetters.filter(
          (d) =>
            (d.stream === undefined || d.stream === definition.stream) &&
            (d.group === undefined || d.group === definition.group),
        ),
      ),
      logger: new Logger(`${definition.stream}/${definition.group}`),
      tracing: this.otel && new ConsumerTracing(this.otel, definition.stream, definition.group),
      idempotencyWindowMs: this.options.idempotencyWindowMs,
    };
    if (options.partitions !== null)
      return new PartitionedConsumer({
        ...common,
        count: options.partitions,
        leaseMs: options.partitionLeaseMs,
        stopTimeoutMs: this.options.shutdownTimeoutMs,
        leases: this.connections.client.partitions,
        queries: this.connections.client,
        links: this.partitionLinks(definition),
      });
    return new StreamConsumer({
      ...common,
      ...(this.shared
        ? {
            client: this.shared.commands,
            reader: this.shared.reads.reader(
              definition.group,
              definition.stream,
              readClaimIdleMs({ options }), // a plain stream's loop
            ),
            pauses: this.shared.pauses?.probe(definition.group, definition.stream),
            ownsClient: false,
          }
        : { client: this.connections.createLoopClient() }),
    });
  }

  /**
   * The connections of a partitioned handler's loops: the app's shared ones (`sharedReads`), else
   * a commands connection and a read of its own, whatever its partition count.
   */
  private partitionLinks({ stream, group }: HandlerDefinition): PartitionLinks {
    if (this.shared) return appPartitionLinks(this.shared, group, stream);
    return new OwnPartitionLinks({
      stream,
      group,
      consumer: this.options.consumerName,
      openCommandsClient: () => this.connections.createLoopClient(),
      openReadClient: () => this.connections.createReadClient(),
      partitionOf: (partitionStream) => this.connections.readPartitionOf(partitionStream),
      warn: (text) => this.logger.warn(text),
    });
  }

  /** Names the newer server's verbs in use, once at start (docs/compatibility.md). */
  private async reportServerFeatures(): Promise<void> {
    this.logger.log(messages.serverFeatures(await this.connections.client.serverFeatures()));
  }

  /** Streams and groups can be evicted under any policy but `noeviction`: say so once at start. */
  private async checkEvictionPolicy(): Promise<void> {
    try {
      const policy = await this.connections.client.config('maxmemory-policy');
      if (policy !== null && policy !== 'noeviction')
        this.logger.warn(messages.evictionPolicy(policy));
    } catch (err) {
      this.logger.debug(`Could not read maxmemory-policy: ${errorText(err)}`);
    }
  }
}

/** Every matching `@DeadLetter` method is called; one failing keeps the entry pending. */
function deadLetterSink(handlers: readonly DeadLetterDefinition[]): DeadLetterSink {
  return {
    handlerCount: handlers.length,
    async deliver(letter: DeadLetterMessage): Promise<void> {
      const failures: string[] = [];
      for (const handler of handlers) {
        try {
          await handler.method(letter);
        } catch (err) {
          failures.push(`${handler.name}: ${errorText(err)}`);
        }
      }
      if (failures.length > 0)
        throw new Error(`@DeadLetter handler failed (${failures.join('; ')})`);
    },
  };
}
