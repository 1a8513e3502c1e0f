import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { DeadLetterMetadata } from '../decorators/dead-letter.decorator';
import type { StreamHandlerMetadata } from '../decorators/stream-handler.decorator';
import { DEAD_LETTER_METADATA, STREAM_HANDLER_METADATA } from '../config/constants';

/** Reads the package's decorator metadata off methods (internal). */
@Injectable()
export class EchoStreamMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** Every `@StreamHandler` stacked on the method (none for a non-method). */
  streamHandlers(method: unknown): StreamHandlerMetadata[] {
    if (!isMethod(method)) return [];
    return (
      this.reflector.get<StreamHandlerMetadata[] | undefined>(STREAM_HANDLER_METADATA, method) ?? []
    );
  }

  /** The method's `@DeadLetter` scope, if it has one. */
  deadLetter(method: unknown): DeadLetterMetadata | undefined {
    if (!isMethod(method)) return undefined;
    return this.reflector.get<DeadLetterMetadata | undefined>(DEAD_LETTER_METADATA, method);
  }
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
function isMethod(target: unknown): target is Function {
  return typeof target === 'function';
}
