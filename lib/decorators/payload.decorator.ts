import { StreamParamtype } from '../handlers/stream-params';
import { streamParam, type StreamPipe } from './stream-param.decorator';

/**
 * Injects the decoded payload of the entry into a `@StreamHandler` parameter, after the global,
 * class, method and these pipes (`new ValidationPipe({ transform: true })` turns it into a DTO
 * instance). `@Payload('orderId')` injects one property. In batch mode it injects the array of
 * payloads. A pipe that throws dead-letters the entry at once with reason `'rejected'`.
 *
 * @example
 * ```ts
 * @StreamHandler('orders', 'billing')
 * charge(@Payload(new ValidationPipe({ transform: true })) order: OrderDto) { ... }
 * ```
 * @see docs/delivery.md "Nest pipeline"
 */
export function Payload(...pipes: StreamPipe[]): ParameterDecorator;
export function Payload(property: string, ...pipes: StreamPipe[]): ParameterDecorator;
export function Payload(...args: Array<string | StreamPipe>): ParameterDecorator {
  const [first, ...rest] = args;
  return typeof first === 'string'
    ? streamParam('Payload', StreamParamtype.PAYLOAD, first, rest)
    : streamParam('Payload', StreamParamtype.PAYLOAD, undefined, args);
}
