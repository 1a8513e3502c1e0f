/** The fields of an {@link EchoStreamRpcTimeoutError}. */
export interface RpcTimeoutErrorFields {
  /** The pattern (its stream) the request was sent to. */
  readonly pattern: string;
  /** The request's correlation id; a reply to it that comes later is dropped. */
  readonly correlationId: string;
  /** The `timeoutMs` in force. */
  readonly timeoutMs: number;
}

/**
 * `EchoStreamClient.send()` got no reply within `timeoutMs`. The request may still be handled (it
 * is in its stream; a server past its deadline acknowledges it without running it); its reply,
 * if one comes, is dropped.
 */
export class EchoStreamRpcTimeoutError extends Error implements RpcTimeoutErrorFields {
  readonly pattern: string;
  readonly correlationId: string;
  readonly timeoutMs: number;

  constructor(message: string, fields: RpcTimeoutErrorFields) {
    super(message);
    this.name = 'EchoStreamRpcTimeoutError';
    this.pattern = fields.pattern;
    this.correlationId = fields.correlationId;
    this.timeoutMs = fields.timeoutMs;
  }
}
