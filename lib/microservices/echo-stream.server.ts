import { Logger, type INestApplicationContext } from '@nestjs/common';
import { CustomTransportStrategy, Server } from '@nestjs/microservices';
import type { HandlerCalls, HandlerSource } from '../config/handler-definitions';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import { HandlerCleanups } from '../lifecycle/handler-cleanups';
import { StreamRetentions } from '../lifecycle/stream-retentions';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { EchoStreamOrchestrator } from '../runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import {
  resolveServerOptions,
  type EchoStreamServerOptions,
  type ResolvedServerOptions,
} from './microservice-options';
import { PatternCall } from './pattern-call';
import { patternRoutes } from './pattern-routes';
import { ReplyWriter } from './reply-writer';
import {
  ConnectionListeners,
  type EchoStreamConnectionEvents,
  type EchoStreamStatus,
} from './link-status';

/** What one `listen()` built: the connections, the loops, their consumer cleanup and retention. */
interface Running {
  connections: EchoStreamConnections;
  orchestrator: EchoStreamOrchestrator;
  cleanups: HandlerCleanups;
  retentions: StreamRetentions;
}

/** The engine calls what the transport built: each definition's method is Nest's handler call. */
const DIRECT_CALLS: HandlerCalls = { build: (definition) => definition.method };

/**
 * A Nest microservices transport on Redis Streams consumer groups
 * (`NestFactory.createMicroservice(AppModule, { strategy: new EchoStreamServer({ group }) })`):
 * each `@EventPattern` / `@MessagePattern` pattern is a stream, and each (pattern, group) one
 * managed loop of the engine `@StreamHandler` methods run on: at-least-once, retries with backoff,
 * dead letters, reclaim of a dead peer's entries, partitions, dedup, graceful stop.
 * `@EventPattern(pattern, { group, ...StreamHandlerOptions })` sets the loop's options.
 */
export class EchoStreamServer
  extends Server<EchoStreamConnectionEvents, EchoStreamStatus>
  implements CustomTransportStrategy
{
  /** The transport awaits every handler and judges its failure itself (no "unhandled" log). */
  override readonly propagatesEventHandlerErrors = true;
  private readonly options: ResolvedServerOptions;
  private readonly own = new Logger(EchoStreamServer.name);
  private running: Running | undefined;
  private closing: Promise<void> | undefined;
  private readonly listeners = new ConnectionListeners();

  /** @throws EchoStreamConfigError on a bad option (`group` is required). */
  constructor(options: EchoStreamServerOptions) {
    super();
    this.options = resolveServerOptions(options);
  }

  /**
   * Starts one loop per (pattern, group) of the registered handlers; `callback` gets the error of
   * a bad pattern or handler option, or of the start-up checks (partition counts, `deleteOnAck`).
   */
  listen(callback: (err?: unknown) => void): void {
    this.start().then(
      () => callback(),
      (err: unknown) => callback(err),
    );
  }

  private async start(): Promise<void> {
    if (this.running) return;
    const { module, group, streamOf, app } = this.options;
    const routes = patternRoutes(this.getHandlers(), group, streamOf);
    const connections = new EchoStreamConnections(module);
    const replies = new ReplyWriter(() => connections.client);
    const calls = routes.map(
      (route) => new PatternCall(route, replies, new Logger(`${route.stream}/${route.group}`)),
    );
    const source: HandlerSource = {
      handlers: calls.map((call) => call.definition(module.defaults)),
      deadLetters: calls.flatMap((call) => call.deadLetter() ?? []),
    };
    const registry = app ? registryOf(app) : new ConsumerRegistry();
    const orchestrator = new EchoStreamOrchestrator(
      source,
      registry,
      connections,
      DIRECT_CALLS,
      module,
    );
    const cleanups = new HandlerCleanups(source.handlers, module.consumerName);
    const retentions = new StreamRetentions({
      rules: module.retention,
      intervalMs: module.retentionIntervalMs,
      consumerName: module.consumerName,
      archiveOf: () => undefined, // @StreamArchive methods are the module's
    });
    this.running = { connections, orchestrator, cleanups, retentions };
    this.listeners.attach(
      connections.client.unwrap(),
      (status) => this._status$.next(status),
      () => this.closing !== undefined,
    );
    try {
      await orchestrator.onApplicationBootstrap();
    } catch (err) {
      await this.close();
      throw err;
    }
    if (!cleanups.empty || !retentions.empty) {
      const lifecycle = connections.client.lifecycle();
      cleanups.start(lifecycle);
      retentions.start(lifecycle);
    }
    this.own.log(`Listening on ${routes.length} stream(s) as group '${group}'`);
  }

  /**
   * Stops the loops as the module's stop does (entries in hand finish, within
   * `shutdownTimeoutMs`; the rest go back to the group), then closes the connections. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    const running = this.running;
    if (!running) return;
    try {
      await Promise.all([
        running.cleanups.stop(),
        running.retentions.stop(),
        running.orchestrator.stop(),
      ]);
      await running.retentions.release();
    } finally {
      await running.connections.onApplicationShutdown();
      this._status$.next('disconnected');
    }
  }

  /**
   * Listens to an event of the shared connection (ioredis's `ready`, `error`, `reconnecting`,
   * ...); before `listen()`, once it has opened it.
   */
  on<
    EventKey extends keyof EchoStreamConnectionEvents = keyof EchoStreamConnectionEvents,
    EventCallback extends EchoStreamConnectionEvents[EventKey] =
      EchoStreamConnectionEvents[EventKey],
  >(event: EventKey, callback: EventCallback): void {
    this.listeners.add(event, callback as (...args: unknown[]) => void);
  }

  /** The shared ioredis connection (a `Redis` or a `Cluster`), once `listen()` ran. */
  unwrap<T>(): T {
    if (!this.running)
      throw new Error(
        'Not initialized. Please call the "listen"/"startAllMicroservices" method before ' +
          'accessing the server.',
      );
    return this.running.connections.client.unwrap() as T;
  }
}

/** The registry of a hybrid app's `EchoStreamModule`, whose stats and surfaces read it. */
function registryOf(app: Pick<INestApplicationContext, 'get'>): ConsumerRegistry {
  try {
    return app.get(ConsumerRegistry, { strict: false });
  } catch {
    throw new EchoStreamConfigError(
      "EchoStreamServer: option 'app' names an app without EchoStreamModule: import " +
        'EchoStreamModule.forRoot(...) in it, or leave the option out to run the transport alone',
    );
  }
}
