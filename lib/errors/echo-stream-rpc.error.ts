/** Why a request got an error reply instead of its handler's value. */
export type RpcErrorReason =
  /** The handler (or a guard, pipe or filter) threw an `RpcException`: the caller's answer. */
  | 'rpc'
  /** The request was dead-lettered: its handler kept failing, or threw a `NonRetryableError`. */
  | 'dead_letter'
  /** The handler's value could not be written as a reply (JSON). */
  | 'unserializable';

/** The fields of an {@link EchoStreamRpcError}. */
export interface RpcErrorFields {
  /** The pattern (its stream) the request was sent to. */
  readonly pattern: string;
  /** The request's correlation id. */
  readonly correlationId: string;
  readonly reason: RpcErrorReason;
  /**
   * The error value the server answered: an `RpcException`'s `getError()` (an object, or
   * `{ status: 'error', message }` for a string), or `{ status: 'error', message }` for a dead letter.
   */
  readonly error: unknown;
}

/**
 * `EchoStreamClient.send()` got an error reply: the handler answered with an error (`reason`
 * `'rpc'`), or the request was dead-lettered. Never a timeout: that is
 * {@link EchoStreamRpcTimeoutError}.
 */
export class EchoStreamRpcError extends Error implements RpcErrorFields {
  readonly pattern: string;
  readonly correlationId: string;
  readonly reason: RpcErrorReason;
  readonly error: unknown;

  constructor(message: string, fields: RpcErrorFields) {
    super(message);
    this.name = 'EchoStreamRpcError';
    this.pattern = fields.pattern;
    this.correlationId = fields.correlationId;
    this.reason = fields.reason;
    this.error = fields.error;
  }
}
