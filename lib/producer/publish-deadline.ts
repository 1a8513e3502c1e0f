import { EchoStreamConnectionError } from '../errors/echo-stream-connection.error';
import { EchoStreamPublishError } from '../errors/echo-stream-publish.error';
import type { ConnectionMonitor } from '../redis/stream-roles';
import { RedisDeadlineError, replyWithin } from '../redis/redis-errors';

/** What the publish timer rejects with; the link stays as it is (the reply may just be slow). */
const NO_REPLY = Symbol('no reply within publishTimeoutMs');

/** One publish call, for its error. */
export interface PublishCall {
  /** `'publish'` or `'publishMany'`. */
  method: string;
  stream: string;
  /** The branded ids the call writes. */
  ids: readonly string[];
}

/**
 * Runs one write (`send`) within `timeoutMs` in all, so a publish fails fast while Redis is
 * unreachable (`publishTimeoutMs`, docs/operations.md "When Redis is down"):
 * 1. no connection yet: wait for it (nothing is queued) at most `timeoutMs`; past it, reject with
 *    `written: false` and the outage's cause;
 * 2. connected: send once, wait for the reply what is left of `timeoutMs`; past it, or when the
 *    link drops meanwhile, reject with `written: 'unknown'`.
 * A write is never sent a second time: the shared connection does not re-send (see
 * `createConnection`), and a slow reply is left to arrive (it is not a reason to drop the link).
 * Server replies (OOM, WRONGTYPE ...) reject as they are.
 *
 * `waitMs` is time the server itself may take on purpose before it replies (a durable publish's
 * `WAIT ... replicaTimeoutMs`): it is added to the reply's bound, never to the connection's.
 * @default waitMs 0
 */
export async function publishWithin<T>(
  link: ConnectionMonitor | undefined,
  timeoutMs: number,
  call: PublishCall,
  send: () => Promise<T>,
  waitMs = 0,
): Promise<T> {
  const startedAt = Date.now();
  if (link && link.state !== 'ready') {
    try {
      await link.whenReady(timeoutMs, 'XADD');
    } catch (err) {
      throw publishError(call, timeoutMs, false, err, link);
    }
  }
  const left = Math.max(1, timeoutMs - (Date.now() - startedAt)) + waitMs;
  const sent = send();
  try {
    // a reply that comes (or fails) after the caller was told is left to arrive: nothing waits
    return await replyWithin(sent, left, () => NO_REPLY);
  } catch (err) {
    if (
      err === NO_REPLY ||
      err instanceof EchoStreamConnectionError ||
      err instanceof RedisDeadlineError
    ) {
      throw publishError(call, timeoutMs, 'unknown', err, link, waitMs);
    }
    throw err;
  }
}

function publishError(
  call: PublishCall,
  timeoutMs: number,
  written: false | 'unknown',
  err: unknown,
  link: ConnectionMonitor | undefined,
  waitMs = 0,
): EchoStreamPublishError {
  const where = `StreamProducer.${call.method}() to '${call.stream}'`;
  const ids = idsText(call.ids);
  if (err instanceof EchoStreamConnectionError) {
    const outcome =
      written === false
        ? `nothing was written (no connection within ${timeoutMs} ms)`
        : `the write may or may not have reached Redis (${ids}); publish again with the same id so consumers dedup it`;
    return new EchoStreamPublishError(
      `${where} failed: ${err.message}; ${outcome}`,
      { ...fieldsOf(err), ...call, written, timeoutMs },
      err,
    );
  }
  // no reply within the time (a slow or half-open link): the write may have been applied
  const address = link?.address ?? 'unknown address';
  const within =
    waitMs > 0 ? `${timeoutMs} ms (+ ${waitMs} ms replicaTimeoutMs)` : `${timeoutMs} ms`;
  return new EchoStreamPublishError(
    `${where}: no reply from Redis at ${address} within ${within}; the write may or may ` +
      `not have reached Redis (${ids}); publish again with the same id so consumers dedup it`,
    {
      reason: 'timeout',
      address,
      everConnected: link?.everConnected ?? true,
      command: 'XADD',
      detail: err instanceof Error ? err.message : `XADD got no reply within ${timeoutMs} ms`,
      ...call,
      written,
      timeoutMs,
    },
    err === NO_REPLY ? undefined : err,
  );
}

function fieldsOf(err: EchoStreamConnectionError) {
  const { reason, address, everConnected, command, detail } = err;
  return { reason, address, everConnected, command, detail };
}

/** `id a`, `ids a, b, c`, or for a long batch `500 ids, a ... z`. */
function idsText(ids: readonly string[]): string {
  if (ids.length === 1) return `id ${ids[0]}`;
  if (ids.length <= 3) return `ids ${ids.join(', ')}`;
  return `${ids.length} ids, ${ids[0]} ... ${ids[ids.length - 1]}`;
}
