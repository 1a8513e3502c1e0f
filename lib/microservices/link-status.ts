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
