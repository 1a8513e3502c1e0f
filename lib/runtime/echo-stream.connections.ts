import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { errorText } from '../codec/codecs';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import type { ResolvedModuleOptions } from '../config/module-options';
import type { RedisLinkStatus } from '../interfaces/redis-server.interface';
import {
  type ConnectionMonitor,
  OutageReporter,
  type ConnectionPurpose,
} from '../redis/connection';
import { RedisStreamsClient } from '../redis/streams-client';

/**
 * Owns the Redis connections of the app: one shared (producer, admin, stats, waking parked reads)
 * and one per consumer loop (internal).
 */
@Injectable()
export class EchoStreamConnections implements OnApplicationShutdown {
  private readonly logger = new Logger(EchoStreamConnections.name);
  private sharedClient: RedisStreamsClient | undefined;
  /** The shared connection's monitor, kept after shutdown so a late status call opens nothing. */
  private sharedLink: ConnectionMonitor | undefined;
  private readonly outages: OutageReporter;

  constructor(@Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions) {
    this.outages = new OutageReporter(this.logger, options.publishTimeoutMs);
  }

  /** The shared client (opened on first use). */
  get client(): RedisStreamsClient {
    if (!this.sharedClient) {
      this.sharedClient = this.open('shared');
      this.sharedLink = this.sharedClient.link;
      this.outages.watch(this.sharedLink);
    }
    return this.sharedClient;
  }

  /** The state of the shared connection (opened on first use), with the cause while down. */
  sharedLinkStatus(): RedisLinkStatus {
    return (this.sharedLink ?? this.client.link).status();
  }

  /** The `publishTimeoutMs` module option. */
  get publishTimeoutMs(): number {
    return this.options.publishTimeoutMs;
  }

  /** A client on a new connection of its own, for one consumer loop; the loop closes it. */
  createLoopClient(): RedisStreamsClient {
    return this.loopClient('loop');
  }

  /** With shared reads: the client of one group's shared read (its owner closes it). */
  createReadClient(): RedisStreamsClient {
    return this.loopClient('read');
  }

  /** With shared reads: the client every loop sends its other commands on (its owner closes it). */
  createCommandsClient(): RedisStreamsClient {
    return this.loopClient('commands');
  }

  /**
   * Which shared read a stream's loop joins within its group: one per group on one node; on a
   * Cluster one per hash slot, since one XREADGROUP may only name keys of one slot.
   */
  readPartitionOf(stream: string): string {
    return this.client.slotKeyOf(stream);
  }

  private loopClient(purpose: ConnectionPurpose): RedisStreamsClient {
    // a parked read of the loop is woken by CLIENT UNBLOCK over the shared connection
    const client = this.open(purpose, this.client);
    this.outages.watch(client.link);
    return client;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.sharedClient?.close();
    this.sharedClient = undefined;
  }

  private open(purpose: ConnectionPurpose, wakeVia?: RedisStreamsClient): RedisStreamsClient {
    // the outage reporter says why Redis is unreachable, the loops say what they retry
    const onError = (err: Error): void => {
      this.logger.debug(`Redis connection (${purpose}): ${errorText(err)}`);
    };
    return RedisStreamsClient.open(this.options, purpose, onError, {
      wakeVia,
      serverFeatures: this.options.serverFeatures,
      warn: (message) => this.logger.warn(message),
    });
  }
}
