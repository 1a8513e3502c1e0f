import { Logger } from '@nestjs/common';
import { errorText } from '../codec/codecs';
import type { ConnectionTarget } from '../redis/connection';
import { RedisStreamsClient } from '../redis/streams-client';
import type { ServerFeatureMode } from '../interfaces/redis-server.interface';

/**
 * The connection durable publishes (`{ replicas }`) are sent on, opened on their first use and
 * closed at shutdown (internal).
 *
 * Why not the shared connection: `WAIT` blocks the connection it is sent on until the replicas
 * answer or `replicaTimeoutMs` passes, and Redis reads nothing else from a blocked client. On the
 * shared connection every other publish, stats read and `CLIENT UNBLOCK` (a loop's shutdown or
 * retry wake-up) would queue behind each WAIT, up to `replicaTimeoutMs` per durable publish while
 * a replica is missing. Durable publishes still queue behind each other here (one WAIT at a time
 * per node connection).
 */
export class DurablePublishLink {
  private readonly logger = new Logger('StreamProducer');
  private client: RedisStreamsClient | undefined;
  private closed = false;

  /**
   * @param target where to connect (the module's `connection` / `cluster`); `undefined` sends
   *   durable publishes on the shared client (a producer built without the module options).
   * @param shared the shared client, also used once this link is closed (after shutdown).
   * @param serverFeatures the module option `serverFeatures` (as the shared client's).
   */
  constructor(
    private readonly target: ConnectionTarget | undefined,
    private readonly shared: () => RedisStreamsClient,
    private readonly serverFeatures?: ServerFeatureMode,
  ) {}

  /** The client to send a durable publish on. */
  get streams(): RedisStreamsClient {
    if (!this.target || this.closed) return this.shared();
    if (!this.client) {
      this.client = RedisStreamsClient.open(
        this.target,
        'publish',
        (err) => this.logger.debug(`Redis connection (publish): ${errorText(err)}`),
        { serverFeatures: this.serverFeatures, warn: (message) => this.logger.warn(message) },
      );
    }
    return this.client;
  }

  /** Closes the connection, if it was opened. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.close();
  }
}
