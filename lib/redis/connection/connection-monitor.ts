import type { Cluster, Redis } from 'ioredis';
import { EchoStreamConnectionError } from '../../errors/echo-stream-connection.error';
import type { RedisLinkStatus } from '../../interfaces/redis-server.interface';
import {
  classifyConnectionError,
  failureText,
  isLinkDownSymptom,
  type ConnectionFailure,
} from './connection-failure';

/** The state of one connection as a person should read it. */
export type LinkState = RedisLinkStatus['state'];

/** What a {@link ConnectionMonitor} tells its listeners. */
export type LinkEvent = 'down' | 'up' | 'ended';

/**
 * Watches one ioredis connection (single node or cluster) and remembers why it is down: whether
 * it ever reached Redis, the last failure of the current outage and since when. It turns the
 * driver's symptoms ("max retries per request", "Connection is closed.") into errors that name
 * the cause and the address, and lets a caller wait for the connection instead of queueing.
 */
export class ConnectionMonitor {
  private everReady = false;
  private failure: ConnectionFailure | null = null;
  private downSince: number | null = null;
  private ended = false;
  /** Cluster: the node that failed last. */
  private failedNode: string | undefined;
  private readonly listeners = new Set<(event: LinkEvent) => void>();
  /** Callers of `whenReady()` waiting now: told on 'ready' (true) or 'end' (false). */
  private readonly waiters = new Set<(ready: boolean) => void>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly now: () => number = Date.now,
  ) {
    redis.on('error', (err: unknown) => this.noteError(err));
    redis.on('node error', (err: unknown, node: unknown) => {
      if (typeof node === 'string') this.failedNode = node;
      this.noteError(err);
    });
    redis.on('ready', () => this.onReady());
    redis.on('close', () => {
      if (this.downSince === null && this.everReady) this.downSince = this.now();
    });
    redis.on('end', () => {
      this.ended = true;
      for (const waiter of [...this.waiters]) waiter(false);
      this.emit('ended');
    });
  }

  /** `host:port` (or the socket path; a cluster: the node that failed last). Never credentials. */
  get address(): string {
    return addressOf(this.redis, this.failedNode);
  }

  /**
   * `ready`; `down` after a failed attempt or a lost link, until it is back; `connecting` before
   * the first answer or failure; `ended` once closed for good.
   */
  get state(): LinkState {
    if (this.ended || this.redis.status === 'end') return 'ended';
    if (this.redis.status === 'ready') return 'ready';
    return this.failure !== null || this.downSince !== null ? 'down' : 'connecting';
  }

  /** True once the connection reached Redis (ready) at least once. */
  get everConnected(): boolean {
    return this.everReady;
  }

  /** The last failure of the current outage; `null` while connected or before any failure. */
  get lastFailure(): ConnectionFailure | null {
    return this.failure;
  }

  /** A plain copy of the state, for stats and health. */
  status(): RedisLinkStatus {
    const state = this.state;
    const down = state === 'down';
    return {
      address: this.address,
      state,
      everConnected: this.everReady,
      error: down ? this.describe() : null,
      reason: down ? (this.failure?.reason ?? 'closed') : null,
      downSince: down ? this.downSince : null,
    };
  }

  /**
   * Calls `listener` on the first failure of an outage and each change of its reason (`down`), on
   * recovery (`up`) and when the connection is closed for good (`ended`).
   */
  onChange(listener: (event: LinkEvent) => void): void {
    this.listeners.add(listener);
  }

  /** Records a failure found by the caller (a command deadline that dropped the link). */
  noteFailure(failure: ConnectionFailure): void {
    const changed = this.failure?.reason !== failure.reason;
    this.failure = failure;
    this.downSince ??= this.now();
    if (changed) this.emit('down');
  }

  /**
   * One line for logs and errors: `cannot connect to Redis at 127.0.0.1:6379 (never connected):
   * connection refused (...)`, or `connection to Redis at ... lost: ...`.
   */
  describe(failure: ConnectionFailure | null = this.failure): string {
    const known = failure ?? { reason: 'closed', detail: '' };
    return this.everReady
      ? `connection to Redis at ${this.address} lost: ${failureText(known)}`
      : `cannot connect to Redis at ${this.address} (never connected): ${failureText(known)}`;
  }

  /**
   * `err` as the caller should see it: a connection failure or a symptom of a down link becomes
   * an {@link EchoStreamConnectionError} naming the cause and the address; anything else (a
   * server reply) is returned as it is.
   */
  explain(err: unknown, command: string): unknown {
    const own = classifyConnectionError(err);
    if (own === undefined && !isLinkDownSymptom(err)) return err;
    if (own !== undefined && this.failure === null) this.noteFailure(own);
    return this.unavailable(command, own, err);
  }

  /** An error for `command` that could not run: the current outage's cause, or `failure`. */
  unavailable(
    command: string,
    failure?: ConnectionFailure,
    cause?: unknown,
  ): EchoStreamConnectionError {
    const known = failure ?? this.failure ?? { reason: 'closed' as const, detail: '' };
    return new EchoStreamConnectionError(
      `${this.describe(known)}; ${command} failed`,
      {
        reason: known.reason,
        address: this.address,
        everConnected: this.everReady,
        command,
        detail: known.detail,
      },
      cause,
    );
  }

  /**
   * Resolves once the connection is ready; rejects with an {@link EchoStreamConnectionError}
   * (the outage's cause, or `timeout`) when it is not within `timeoutMs`, at once when it ended.
   * Nothing is queued meanwhile.
   */
  whenReady(timeoutMs: number, command: string): Promise<void> {
    if (this.redis.status === 'ready') return Promise.resolve();
    if (this.state === 'ended') return Promise.reject(this.unavailable(command));
    // NOTE: with `lazyConnect` nothing connects until asked
    if (this.redis.status === 'wait') this.redis.connect().catch(() => undefined);
    // one waiter per caller in a set of our own (not a listener each on the connection: many
    // callers at once would trip Node's max-listeners warning); each leaves after `timeoutMs`
    return new Promise<void>((resolve, reject) => {
      const done = (ready: boolean, failure?: ConnectionFailure): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        if (ready) resolve();
        else reject(this.unavailable(command, failure));
      };
      const timer = setTimeout(
        () =>
          done(
            false,
            this.failure ?? { reason: 'timeout', detail: `no connection within ${timeoutMs} ms` },
          ),
        timeoutMs,
      );
      this.waiters.add(done);
    });
  }

  private noteError(err: unknown): void {
    // a command flushed by ioredis is re-emitted as an 'error': the cause came before it
    if (isLinkDownSymptom(err)) return;
    const failure = classifyConnectionError(err);
    if (!failure) return;
    // NOTE: a TLS client facing a plain server waits for a handshake that never comes: say so
    const tls = !(this.redis as Cluster).isCluster && (this.redis as Redis).options.tls;
    if (failure.reason === 'timeout' && tls && !this.everReady) {
      this.noteFailure({
        reason: 'timeout',
        detail: `${failure.detail}; no TLS session (does the server speak TLS on this port?)`,
      });
      return;
    }
    this.noteFailure(failure);
  }

  private onReady(): void {
    const wasDown = this.failure !== null || this.downSince !== null;
    this.everReady = true;
    this.failure = null;
    this.downSince = null;
    this.failedNode = undefined;
    for (const waiter of [...this.waiters]) waiter(true);
    if (wasDown) this.emit('up');
  }

  private emit(event: LinkEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** `host:port` of a connection, `[v6]:port` for IPv6, the path of a Unix socket. */
function addressOf(redis: Redis | Cluster, failedNode: string | undefined): string {
  if (failedNode !== undefined) return failedNode;
  if ((redis as Cluster).isCluster) return 'the Redis Cluster';
  const { host, port, path } = (redis as Redis).options;
  if (path) return path;
  const name = host ?? 'localhost';
  return `${name.includes(':') ? `[${name}]` : name}:${port ?? 6379}`;
}
