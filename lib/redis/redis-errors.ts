/**
 * What a Redis reply or a failed command says, told from the error alone, and when a missing
 * reply counts as missing. No ioredis here: the engine (lib/consumer) and the surfaces classify
 * errors without loading the Redis driver.
 */

/** Raised when a command outlives its deadline; the connection was replaced. */
export class RedisDeadlineError extends Error {
  constructor(command: string, ms: number) {
    super(
      `${command} got no reply within ${ms} ms; the connection was dropped and is being replaced`,
    );
    this.name = 'RedisDeadlineError';
  }
}

/**
 * The deadline every Redis reply is held to: settles as `reply` does, or, when `ms` pass first,
 * rejects with what `expired()` returns. The verdict waits for the I/O of that turn of the event
 * loop: after a busy stretch (a long synchronous handler, a GC pause) the timer runs before the
 * socket is read, and a reply already received must not be taken for one that never came.
 */
export function replyWithin<T>(reply: Promise<T>, ms: number, expired: () => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (!settled) reject(expired());
        }),
      ms,
    );
    reply.then(
      (value) => {
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** True for an error reply of the server (not a connection failure): it would say the same again. */
export function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/**
 * True for a reply saying the group (or its stream) no longer exists: `NOGROUP` (also what Redis 8
 * and Valkey send a read parked on a deleted stream), or the `UNBLOCKED the stream key no longer
 * exists` of Redis 7.0 for the same (README "Servers").
 */
export function isNoGroupError(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.message.startsWith('NOGROUP') ||
      err.message.startsWith('UNBLOCKED the stream key no longer exists'))
  );
}

/** True for a `BUSYGROUP` reply: XGROUP CREATE found the group already there. */
export function isBusyGroupError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('BUSYGROUP');
}

/** True for an `OOM` reply: used memory is over `maxmemory` and the command may add data. */
export function isOomError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM');
}

/** True for a `WRONGTYPE` reply: the key holds another type. */
export function isWrongTypeError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('WRONGTYPE');
}

/** True for a `NOPERM` reply: the ACL user may not run that command or touch that key. */
export function isNoPermError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOPERM');
}

/**
 * True when the server will not run a script at all: an ACL without `+evalsha +eval` (`NOPERM`),
 * or scripting switched off (`unknown command`). Not `OOM ... not allowed`: that one passes.
 */
export function isRefusedScript(err: unknown): boolean {
  return isNoPermError(err) || (err instanceof Error && /unknown command/i.test(err.message));
}

/** True for a `NOSCRIPT` reply: the server does not have the script of an EVALSHA (yet). */
export function isNoScriptError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/** True for XINFO's `no such key` reply: the stream does not exist. */
export function isNoSuchKeyError(err: unknown): boolean {
  return err instanceof Error && /no such key/i.test(err.message);
}

/**
 * Whether `err` is Redis refusing an entry id or a range bound (`ERR Invalid stream ID ...`,
 * `ERR invalid start ID for the interval`, `... end ID ...`): input the caller should have
 * refused, e.g. an exclusive bound that cannot be stepped past (`(0-0` as the end of XREVRANGE).
 */
export function isInvalidStreamIdError(err: unknown): boolean {
  return (
    err instanceof Error && /^ERR (invalid stream id|invalid (start|end) id)/i.test(err.message)
  );
}
