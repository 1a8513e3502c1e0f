import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationBootstrap,
  OnModuleInit,
} from '@nestjs/common';
import { resolveCodec } from '../codec/codecs';
import { StreamArchiveExplorer } from '../discovery/echo-stream-archive.explorer';
import { checkDeleteOnAckPlan } from './delete-on-ack-checks';
import { EchoStreamConnections } from './echo-stream.connections';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { EchoStreamExplorer } from '../discovery/echo-stream.explorer';
import type { ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { StreamCodec } from '../interfaces/codec.interface';
import type { RetentionReport } from '../interfaces/lifecycle.interface';
import { HandlerCleanups } from '../lifecycle/handler-cleanups';
import { StreamRetentions } from '../lifecycle/stream-retentions';

/**
 * Runs the stream lifecycle (docs/operations.md) on timers from bootstrap to shutdown: retention
 * (with the archive methods) per rule, consumer cleanup per handler (internal). Also answers which
 * codec decodes a stream's history.
 */
@Injectable()
export class EchoStreamLifecycle
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly retentions: StreamRetentions;
  private cleanups: HandlerCleanups | undefined;

  constructor(
    private readonly explorer: EchoStreamExplorer,
    private readonly archives: StreamArchiveExplorer,
    private readonly connections: EchoStreamConnections,
    @Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions,
  ) {
    this.retentions = new StreamRetentions({
      rules: options.retention,
      intervalMs: options.retentionIntervalMs,
      consumerName: options.consumerName,
      archiveOf: (stream) => archives.byStream.get(stream),
    });
  }

  /**
   * Checks the archive methods against the rules, `deleteOnAck` against the archive methods and
   * the other groups of the app, and the cleanup options (a mismatch fails before
   * any loop starts: the explorers ran their own `onModuleInit` first, being registered earlier).
   */
  onModuleInit(): void {
    const rules = new Set(this.options.retention.map((rule) => rule.stream));
    for (const [stream, archive] of this.archives.byStream) {
      if (!rules.has(stream)) {
        throw new EchoStreamConfigError(
          `@StreamArchive('${stream}') on ${archive.name}: stream '${stream}' has no retention rule, ` +
            `so nothing would ever be archived; add { stream: '${stream}', maxLen or maxAgeMs } to the ` +
            `module option 'retention' (rules: ${[...rules].join(', ') || 'none'})`,
        );
      }
    }
    checkDeleteOnAckPlan(
      this.explorer.handlers.map((definition) => ({ definition, options: definition.resolved })),
      (stream) => this.archives.byStream.get(stream),
    );
    this.cleanups = new HandlerCleanups(this.explorer.handlers, this.options.consumerName);
  }

  /** Starts the retention and cleanup timers (also with `autoStart: false`). */
  onApplicationBootstrap(): void {
    const cleanups = this.cleanups;
    if (this.retentions.empty && (!cleanups || cleanups.empty)) return;
    const client = this.connections.client.lifecycle();
    this.retentions.start(client);
    cleanups?.start(client);
  }

  async beforeApplicationShutdown(): Promise<void> {
    // a run in progress (an archive call) gets shutdownTimeoutMs; past that its lock is released
    // below and it stops before trimming anything more (its renewal fails)
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([this.retentions.stop(), this.cleanups?.stop()]),
      new Promise((resolve) => (timer = setTimeout(resolve, this.options.shutdownTimeoutMs))),
    ]);
    clearTimeout(timer);
    await this.retentions.release();
  }

  /**
   * The retention figures of `stream` as of its last run.
   * @throws TypeError when no retention rule names `stream`.
   */
  report(stream: string): RetentionReport {
    return this.retentions.report(stream);
  }

  /** The figures of every stream with a retention rule. */
  reports(): RetentionReport[] {
    return this.retentions.reports();
  }

  /** The codec of this app's handler of `stream`, else the module default codec. */
  codecFor(stream: string): StreamCodec<unknown> {
    const handler = this.explorer.handlers.find((h) => h.stream === stream);
    if (!handler) return resolveCodec(this.options.defaults.codec ?? 'json');
    return handler.resolved.codec;
  }
}
