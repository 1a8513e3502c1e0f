import { BaseRpcContext } from '@nestjs/microservices';
import type { StreamMessage } from '../interfaces/stream-message.interface';

/** The arguments of an {@link EchoStreamContext}: the entry as a message, and the pattern. */
export type EchoStreamContextArgs = [message: StreamMessage<unknown>, pattern: string];

/**
 * The context of an `@EventPattern` / `@MessagePattern` handler run by `EchoStreamServer`
 * (`@Ctx() ctx: EchoStreamContext`): the entry being handled, as `@StreamHandler` methods get it.
 */
export class EchoStreamContext extends BaseRpcContext<EchoStreamContextArgs> {
  /** The entry as a `StreamMessage` (payload, ids, attempts, signal, checkpoints, ...). */
  getMessage<T = unknown>(): StreamMessage<T> {
    return this.args[0] as StreamMessage<T>;
  }

  /** The pattern the handler is registered on. */
  getPattern(): string {
    return this.args[1];
  }

  /** The stream the entry was read from. */
  getStream(): string {
    return this.args[0].stream;
  }

  /** The consumer group. */
  getGroup(): string {
    return this.args[0].group;
  }

  /** The Redis entry id, e.g. `1700000000000-0`. */
  getEntryId(): string {
    return this.args[0].entryId;
  }

  /** The branded id (the producer's receipt), else the entry id. */
  getId(): string {
    return this.args[0].id;
  }

  /** The delivery count: 1 on the first delivery, +1 per retry or reclaim. */
  getAttempts(): number {
    return this.args[0].attempts;
  }
}
