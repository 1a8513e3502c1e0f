import type { RedisFailureReason } from '../interfaces/redis-server.interface';

/** The fields of an {@link EchoStreamConnectionError}. */
export interface ConnectionErrorFields {
  /** The kind of failure. */
  readonly reason: RedisFailureReason;
  /** Where the connection goes: `host:port` (or the socket path); never credentials. */
  readonly address: string;
  /** `false` while the connection never reached Redis since the app started. */
  readonly everConnected: boolean;
  /** The Redis command that failed (`XADD`, `XREADGROUP`, ...). */
  readonly command: string;
  /** The driver's own text of the failure, e.g. `connect ECONNREFUSED 127.0.0.1:6379`. */
  readonly detail: string;
}

/**
 * A Redis command failed because the connection is not there: never established, lost, refused,
 * timed out, not authenticated, TLS failed. Server replies (WRONGTYPE, OOM, NOPERM ...) are not
 * wrapped. `cause` holds the driver's error when there is one.
 */
export class EchoStreamConnectionError extends Error implements ConnectionErrorFields {
  readonly reason: RedisFailureReason;
  readonly address: string;
  readonly everConnected: boolean;
  readonly command: string;
  readonly detail: string;

  constructor(message: string, fields: ConnectionErrorFields, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'EchoStreamConnectionError';
    this.reason = fields.reason;
    this.address = fields.address;
    this.everConnected = fields.everConnected;
    this.command = fields.command;
    this.detail = fields.detail;
  }
}
