import type { KeyExpiry, StreamWrites } from '../redis/stream-roles';
import { REPLY_STREAM_MAX_LEN, replyFields, type ReplyAddress, type ReplyBody } from './rpc-wire';

/** Where replies are written: the server's shared client (XADD, PEXPIRE). */
export type ReplyLink = Pick<StreamWrites, 'add'> & KeyExpiry;

/**
 * Writes a request's reply to its caller's reply stream: XADD MAXLEN ~ 1000, then the stream's
 * expiry (the caller's `replyTtlMs`), both on one connection in one turn (internal).
 */
export class ReplyWriter {
  constructor(private readonly link: () => ReplyLink) {}

  async send(address: ReplyAddress, body: ReplyBody): Promise<void> {
    const link = this.link();
    const fields = replyFields(address.correlationId, body);
    await Promise.all([
      link.add(address.stream, fields, REPLY_STREAM_MAX_LEN),
      link.expire(address.stream, address.ttlMs),
    ]);
  }
}
