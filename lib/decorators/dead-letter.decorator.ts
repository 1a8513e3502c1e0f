import { SetMetadata } from '@nestjs/common';
import { DEAD_LETTER_METADATA } from '../config/constants';
import { checkName } from './stream-handler.decorator';

/** What `@DeadLetter` records on a method (internal). */
export interface DeadLetterMetadata {
  stream: string | undefined;
  group: string | undefined;
}

/**
 * Makes the method receive dead letters (`DeadLetterMessage`): of every stream, of one stream, or
 * of one stream and group. Throwing keeps the entry pending; the next sweep retries it.
 *
 * @example
 * ```ts
 * @DeadLetter('orders', 'billing')
 * onDead(letter: DeadLetterMessage): void { ... }
 * ```
 */
export function DeadLetter(stream?: string, group?: string): MethodDecorator {
  if (stream !== undefined) checkName('DeadLetter', 'stream', stream);
  if (group !== undefined) {
    if (stream === undefined) checkName('DeadLetter', 'stream (needed with a group)', stream);
    checkName('DeadLetter', 'group', group);
  }
  return SetMetadata<string, DeadLetterMetadata>(DEAD_LETTER_METADATA, { stream, group });
}
