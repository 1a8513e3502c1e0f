import { RpcException } from '@nestjs/microservices';
import { isNonRetryable } from '../errors/non-retryable.error';

/**
 * What a failed call of Nest's handler means for its entry:
 * - `non-retryable`: a `NonRetryableError` reached the transport: the dead-letter path at once;
 * - `rpc`: an `RpcException` (or the value an exception filter made of one): the answer of the
 *   handler; a request gets it as an error reply and is acknowledged;
 * - `failed`: anything else: the entry stays pending for its retry.
 */
export type RpcVerdict =
  | { kind: 'non-retryable'; error: unknown }
  | { kind: 'rpc'; error: unknown }
  | { kind: 'failed'; error: Error };

/** Nest's answer for an exception that is no `RpcException` (`MESSAGES.UNKNOWN_EXCEPTION_MESSAGE`). */
const UNKNOWN_EXCEPTION_MESSAGE = 'Internal server error';

/**
 * The verdict on what Nest's handler threw or its Observable errored with.
 *
 * NOTE: Nest runs every handler error through the microservice's exception filters first; its
 * default filter answers an `RpcException` with `getError()` and anything else with
 * `{ status: 'error', message: 'Internal server error' }` (Nest 11 and 12), so only that shape
 * is told apart from a handler's answer. A `NonRetryableError` reaches the transport as itself
 * when a filter passes errors on (`EchoStreamExceptionFilter`) or inside an `RpcException`
 * (`new RpcException(new NonRetryableError(...))`: `getError()` is the error).
 */
export function rpcVerdict(err: unknown): RpcVerdict {
  if (isNonRetryable(err)) return { kind: 'non-retryable', error: err };
  if (err instanceof RpcException) {
    const answer = err.getError();
    return {
      kind: 'rpc',
      error:
        typeof answer === 'object' && answer !== null
          ? answer
          : { status: 'error', message: answer },
    };
  }
  if (err instanceof Error) return { kind: 'failed', error: err };
  if (isUnknownExceptionAnswer(err))
    return {
      kind: 'failed',
      error: new Error(
        `handler failed (Nest's exception filter answered '${UNKNOWN_EXCEPTION_MESSAGE}'; ` +
          `the RpcExceptionsHandler log line has the error)`,
      ),
    };
  return { kind: 'rpc', error: err };
}

function isUnknownExceptionAnswer(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const keys = Object.keys(err);
  const { status, message } = err as { status?: unknown; message?: unknown };
  return keys.length === 2 && status === 'error' && message === UNKNOWN_EXCEPTION_MESSAGE;
}

/** The error text of an `rpc` answer, for a log line or an `Error`'s message. */
export function answerText(answer: unknown): string {
  if (typeof answer === 'object' && answer !== null) {
    const message = (answer as { message?: unknown }).message;
    if (typeof message === 'string') return message;
    try {
      return JSON.stringify(answer);
    } catch {
      return String(answer);
    }
  }
  return String(answer);
}
