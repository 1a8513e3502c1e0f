import { STREAM_HANDLER_METADATA } from '../config/constants';
import { messages } from '../config/messages';
import { checkHandlerOptions } from '../config/module-options';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface';

/** What `@StreamHandler` records on a method (internal). */
export interface StreamHandlerMetadata {
  stream: string;
  group: string;
  options: Partial<StreamHandlerOptions>;
}

/**
 * Makes the method a managed consumer of `stream` in consumer group `group`: it gets its own loop
 * that reads, reclaims and acknowledges. Returning (or resolving) acks the entry; throwing leaves it
 * pending for redelivery. Stack it to consume several streams with one method.
 *
 * @example
 * ```ts
 * @StreamHandler('orders', 'billing', { maxDeliveries: 3 })
 * async charge(msg: StreamMessage<Order>): Promise<void> { ... }
 * ```
 */
export function StreamHandler(
  stream: string,
  group: string,
  options: Partial<StreamHandlerOptions> = {},
): MethodDecorator {
  checkName('StreamHandler', 'stream', stream);
  checkName('StreamHandler', 'group', group);
  checkHandlerOptions(`@StreamHandler('${stream}', '${group}')`, options);
  const metadata: StreamHandlerMetadata = { stream, group, options: { ...options } };
  return (_target, _key, descriptor) => {
    const method = descriptor.value as object;
    const existing: StreamHandlerMetadata[] =
      Reflect.getMetadata(STREAM_HANDLER_METADATA, method) ?? [];
    Reflect.defineMetadata(STREAM_HANDLER_METADATA, [...existing, metadata], method);
    return descriptor;
  };
}

/** Validates a stream or group name argument (shared by the decorators). */
export function checkName(decorator: string, what: string, value: unknown): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new EchoStreamConfigError(messages.badStreamArgument(decorator, what, value));
  }
}
