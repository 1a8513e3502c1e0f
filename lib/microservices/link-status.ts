/** The status `EchoStreamServer.status` and `EchoStreamClient.status` emit. */
export type EchoStreamStatus = 'connected' | 'disconnected' | 'reconnecting';

/** The events of the connection `on(event, callback)` listens to (ioredis's). */
export type EchoStreamConnectionEvents = {
  ready: () => void;
  error: (err: Error) => void;
  reconnecting: (delayMs: number) => void;
  close: () => void;
  end: () => void;
};

/** What `watchStatus` listens on: the shared connection's events. */
interface StatusSource {
  on(event: 'ready' | 'close' | 'reconnecting' | 'end', listener: () => void): unknown;
}

/**
 * Turns the shared connection's events into the transport's status, as Nest's own Redis transport
 * does: `ready` -> connected, `close` / `end` -> disconnected, `reconnecting` -> reconnecting
 * (not once the transport is closing).
 */
export function watchStatus(
  connection: StatusSource,
  next: (status: EchoStreamStatus) => void,
  isClosing: () => boolean,
): void {
  connection.on('ready', () => next('connected'));
  connection.on('close', () => next('disconnected'));
  connection.on('end', () => next('disconnected'));
  connection.on('reconnecting', () => {
    if (!isClosing()) next('reconnecting');
  });
}

/** A connection `on()` can listen on (ioredis's `Redis` or `Cluster`). */
interface Listenable extends StatusSource {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * The listeners of `on()` for the transport's server and client: kept until the shared connection
 * is open ({@link attach}), then put on it; after that, put on it at once.
 */
export class ConnectionListeners {
  private connection: Listenable | undefined;
  private waiting: Array<{ event: string; listener: (...args: unknown[]) => void }> = [];

  /** Listens to `event` of the connection, now or once it is attached. */
  add(event: string, listener: (...args: unknown[]) => void): void {
    if (this.connection) this.connection.on(event, listener);
    else this.waiting.push({ event, listener });
  }

  /**
   * The connection is open: its events drive the status ({@link watchStatus}) and the listeners
   * added before go on it.
   */
  attach(
    connection: Listenable,
    next: (status: EchoStreamStatus) => void,
    isClosing: () => boolean,
  ): void {
    this.connection = connection;
    watchStatus(connection, next, isClosing);
    for (const { event, listener } of this.waiting.splice(0)) connection.on(event, listener);
  }

  /** The connection closed (a client's `close()`): listeners added now wait for the next one. */
  detach(): void {
    this.connection = undefined;
  }
}
