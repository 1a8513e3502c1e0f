import {
  EchoStreamConnectionError,
  type ConnectionErrorFields,
} from './echo-stream-connection.error';

/** The fields of an {@link EchoStreamPublishError}. */
export interface PublishErrorFields extends ConnectionErrorFields {
  /** The stream written to. */
  readonly stream: string;
  /** The branded ids of the entries of this call, in order. */
  readonly ids: readonly string[];
  /**
   * `false`: nothing was sent (no connection within the time), safe to publish again.
   * `'unknown'`: the write was sent but its reply did not come: the entries may be in the stream.
   * Publish again with the same `{ id }` (`publish`) so consumers dedup it.
   */
  readonly written: false | 'unknown';
  /** The `publishTimeoutMs` in force. */
  readonly timeoutMs: number;
}

/**
 * `StreamProducer.publish()` / `publishMany()` could not reach Redis within `publishTimeoutMs`:
 * no connection, a connection lost mid-write, or no reply in time. The package never sends the
 * write a second time by itself. Carries the cause (`reason`, `address`, `detail`, `cause`).
 */
export class EchoStreamPublishError
  extends EchoStreamConnectionError
  implements PublishErrorFields
{
  readonly stream: string;
  readonly ids: readonly string[];
  readonly written: false | 'unknown';
  readonly timeoutMs: number;

  constructor(message: string, fields: PublishErrorFields, cause?: unknown) {
    super(message, fields, cause);
    this.name = 'EchoStreamPublishError';
    this.stream = fields.stream;
    this.ids = fields.ids;
    this.written = fields.written;
    this.timeoutMs = fields.timeoutMs;
  }
}
