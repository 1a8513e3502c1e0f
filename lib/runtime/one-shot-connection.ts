import { openUrl } from '../redis/connection';
import { BROWSE_DEADLINE_MS } from '../redis/operator';
import type { StreamBrowsing } from '../redis/stream-roles';
import { RedisStreamsClient } from '../redis/streams-client';

/** A connection for one short-lived tool run (the CLI): opened and closed by the caller. */
export interface OneShotConnection {
  client: RedisStreamsClient;
  browser: StreamBrowsing;
  close(): Promise<void>;
}

/**
 * Connects to `url` once, without retries: a refused connection or a failed AUTH rejects at once
 * with the server's or the socket's own message, instead of queueing commands while ioredis
 * reconnects forever.
 */
export async function openOneShotConnection(url: string): Promise<OneShotConnection> {
  const redis = openUrl(url, {
    lazyConnect: true,
    connectionName: 'echo-stream-cli',
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    connectTimeout: BROWSE_DEADLINE_MS,
    retryStrategy: () => null,
    // NOTE: ioredis's disconnect() arms a 2 s timer (disconnectTimeout) for a socket that already
    // closed, so a refused connection kept the CLI alive 2 s after its error line
    disconnectTimeout: 100,
  });
  let lastError: Error | undefined;
  redis.on('error', (err: Error) => (lastError = err));
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    throw lastError ?? err;
  }
  const client = new RedisStreamsClient(redis, undefined, BROWSE_DEADLINE_MS);
  return { client, browser: client.browser(), close: () => client.close() };
}
