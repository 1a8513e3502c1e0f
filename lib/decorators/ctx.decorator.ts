import { StreamParamtype } from '../handlers/stream-params';
import { streamParam } from './stream-param.decorator';

/**
 * Injects the `StreamMessage` (entry id, branded id, attempts, abort signal...) into a
 * `@StreamHandler` parameter; in batch mode, the array of messages. Use it beside `@Payload()`;
 * a method with no parameter decorator receives the `StreamMessage` as its only argument.
 *
 * @example
 * ```ts
 * @StreamHandler('orders', 'billing')
 * charge(@Payload() order: OrderDto, @Ctx() msg: StreamMessage<OrderDto>) { ... }
 * ```
 */
export function Ctx(): ParameterDecorator {
  return streamParam('Ctx', StreamParamtype.CONTEXT, undefined, []);
}
