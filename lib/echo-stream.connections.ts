import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { errorText } from './codec/codecs';
import { ECHO_STREAM_OPTIONS } from './echo-stream.constants';
import type { ResolvedModuleOptions } from './echo-stream.options';
import { createConnection, type ConnectionPurpose } from './redis/redis-connection.factory';
import { RedisStreamsClient, type RedisConnection } from './redis/streams-client';

/**
 * Owns the Redis connections of the app: one shared (producer, admin, stats, waking parked reads)
 * and one per consumer loop (internal).
 */
@Injectable()
export class EchoStreamConnections implements OnApplicationShutdown {
  private readonly logger = new Logger(EchoStreamConnections.name);
  private sharedConnection: RedisConnection | undefined;
  private sharedClient: RedisStreamsClient | undefined;
  private lastErrorLog = 0;

  constructor(@Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions) {}

  /** The shared client (opened on first use). */
  get client(): RedisStreamsClient {
    if (!this.sharedClient) {
      this.sharedConnection = this.open('shared');
      this.sharedClient = new RedisStreamsClient(this.sharedConnection);
    }
    return this.sharedClient;
  }

  /** A client on a new connection of its own, for one consumer loop; the loop closes it. */
  createLoopClient(): RedisStreamsClient {
    const control = this.client.connection;
    return new RedisStreamsClient(this.open('loop'), control);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.sharedClient?.close();
    this.sharedClient = undefined;
  }

  private open(purpose: ConnectionPurpose): RedisConnection {
    return createConnection(this.options, purpose, (err) => {
      // one line per 5 s at most: the loops log their own failures with stream/group context
      const now = Date.now();
      if (now - this.lastErrorLog < 5000) return;
      this.lastErrorLog = now;
      this.logger.warn(`Redis connection (${purpose}): ${errorText(err)}`);
    });
  }
}
