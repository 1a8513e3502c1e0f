import type { ChainableCommander } from 'ioredis';
import { ConnectionMonitor } from './connection-monitor';
import { isCluster, type RedisConnection } from './cluster-routing';
import { isNoScriptError, RedisDeadlineError, replyWithin } from '../redis-errors';

/**
 * Deadline of every non-blocking command.
 * @default 10000
 */
export const DEFAULT_COMMAND_DEADLINE_MS = 10_000;

/** How long `close()` waits for QUIT's reply before it drops the socket. */
const QUIT_DEADLINE_MS = 1000;

/**
 * The one way lib/redis sends a command: over one ioredis connection (single node or cluster),
 * with one deadline rule.
 *
 * The rule: a command that gets no reply within its deadline rejects with
 * {@link RedisDeadlineError}, the failure is noted on the monitor (reason `timeout`) and the
 * connection is dropped and replaced (ioredis reconnects), since a link that stays silent that
 * long may be half-open and every later command would queue behind it. A command that fails is
 * explained by the monitor: while the link is down it rejects with the outage's cause and address
 * (`EchoStreamConnectionError`); a reply error of the server passes through unchanged.
 *
 * Commands sent on another connection (`sendBeside`: a Cluster node, the control connection that
 * wakes a parked read) have the same deadline but drop nothing: that connection is not this
 * link's to replace.
 */
export class CommandLink {
  /** Why the connection is down, if it is: command errors name the cause and the address. */
  readonly monitor: ConnectionMonitor;

  /**
   * @param connection the connection; the owner of this link closes it with `close()`.
   * @param deadlineMs deadline of every command sent without one of its own.
   */
  constructor(
    readonly connection: RedisConnection,
    readonly deadlineMs = DEFAULT_COMMAND_DEADLINE_MS,
  ) {
    this.monitor = new ConnectionMonitor(connection);
  }

  /**
   * Runs a Lua script by its SHA1 (EVALSHA), and sends its text (EVAL) when the server does not
   * have it yet (a restart, a failover, a node new to the slot). The EVALSHA leaves at once, in
   * order with the commands sent after it.
   * @param tail numkeys, the keys, then the arguments.
   */
  sendScript(script: string, sha: string, tail: ReadonlyArray<string | number>): Promise<unknown> {
    return this.send(['EVALSHA', sha, ...tail]).catch((err: unknown) => {
      if (!isNoScriptError(err)) throw err;
      return this.send(['EVAL', script, ...tail]);
    });
  }

  /** Sends one command; a reply later than `deadlineMs` drops the link (it may be half-open). */
  send(args: ReadonlyArray<string | number>, deadlineMs = this.deadlineMs): Promise<unknown> {
    const command = String(args[0]);
    const pending = this.connection.call(command, ...args.slice(1)).catch((err: unknown) => {
      throw this.monitor.explain(err, command);
    });
    return withDeadline(pending, deadlineMs, command, () => {
      this.monitor.noteFailure({
        reason: 'timeout',
        detail: `${command} got no reply within ${deadlineMs} ms`,
      });
      this.drop();
    });
  }

  /**
   * Sends the commands `build` adds to one pipeline, under the same rule: one deadline for the
   * whole pipeline, a late reply drops the link. Replies as ioredis's `exec()` gives them.
   */
  pipeline(
    what: string,
    build: (pipeline: ChainableCommander) => void,
    deadlineMs = this.deadlineMs,
  ): Promise<Array<[Error | null, unknown]>> {
    const pipeline = this.connection.pipeline();
    build(pipeline);
    const pending = pipeline.exec().then(
      (replies) => replies ?? [],
      (err: unknown) => {
        throw this.monitor.explain(err, what);
      },
    );
    return withDeadline(pending, deadlineMs, what, () => {
      this.monitor.noteFailure({
        reason: 'timeout',
        detail: `${what} got no reply within ${deadlineMs} ms`,
      });
      this.drop();
    });
  }

  /**
   * Runs `send` with the link's sockets corked: the commands it sends synchronously (each with its
   * own promise and deadline, as {@link send} sends them) leave in one socket write per
   * connection when it returns, not one write each. A write costs far more CPU than its bytes, so
   * many small commands sent at once (the XACKs of many partition loops, docs/partitions.md
   * "Order") are cheaper this way. Nothing is held past `send`: a command sent later leaves at
   * once, as before. A socket not open (reconnecting) is skipped: its commands queue in ioredis.
   */
  together(send: () => void): void {
    const sockets = this.sockets();
    for (const socket of sockets) socket.cork();
    try {
      send();
    } finally {
      for (const socket of sockets) socket.uncork();
    }
  }

  /** The open sockets of the link: its own, or every master's of a Cluster. */
  private sockets(): Array<{ cork(): void; uncork(): void }> {
    const nodes = isCluster(this.connection) ? this.connection.nodes('master') : [this.connection];
    const open = [];
    for (const node of nodes) {
      // NOTE: ioredis's `stream` (its socket) is absent before the first connect
      const socket = node.stream as (typeof node)['stream'] | undefined;
      if (socket?.writable) open.push(socket);
    }
    return open;
  }

  /** Sends one command on `other`, a connection beside this link's own: deadline, no drop. */
  sendBeside(other: RedisConnection, args: ReadonlyArray<string | number>): Promise<unknown> {
    const command = String(args[0]);
    return withDeadline(other.call(command, ...args.slice(1)), this.deadlineMs, command);
  }

  /**
   * Drops the connection at once; ioredis reconnects it. Whatever was in flight on it rejects
   * (a parked read ends this way when nothing else can wake it).
   */
  drop(): void {
    this.connection.disconnect(true);
  }

  /** QUIT (a dead link cannot say goodbye: at most a second), then the socket is closed. */
  async close(): Promise<void> {
    if (this.connection.status === 'end') return;
    try {
      await withDeadline(this.connection.quit(), QUIT_DEADLINE_MS, 'QUIT');
    } catch {
      // a dead link cannot say goodbye
    }
    this.connection.disconnect();
  }
}

/**
 * Rejects with {@link RedisDeadlineError} (after `onExpire`) when `promise` takes longer than `ms`
 * ({@link replyWithin}: a reply that came while the event loop was busy is taken, and the
 * connection is not dropped for it).
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  command: string,
  onExpire?: () => void,
): Promise<T> {
  return replyWithin(promise, ms, () => {
    onExpire?.();
    return new RedisDeadlineError(command, ms);
  });
}
