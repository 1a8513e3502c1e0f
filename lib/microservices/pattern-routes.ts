import type { MessageHandler } from '@nestjs/microservices';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { StreamHandlerOptions } from '../interfaces/stream-handler-options.interface';

/** One managed loop of the transport: a pattern's handlers in one group. */
export interface PatternRoute {
  pattern: string;
  stream: string;
  group: string;
  /** A `@MessagePattern` handler: a request gets a reply. */
  request: boolean;
  /** Nest's handlers of the pattern in this group, each called on its own. */
  handlers: MessageHandler[];
  /** The `@StreamHandler` options from the extras (`group` taken out). */
  options: Partial<StreamHandlerOptions>;
  /** `"@EventPattern('orders.created') in billing"`, for logs and stats. */
  name: string;
}

/**
 * The loops the transport runs for Nest's registered handlers: one per (pattern, group). Nest
 * chains the `@EventPattern` handlers of one pattern (`handler.next`); the chain is cut here, so
 * each handler is called once, by the loop of its own group (`extras.group`, else the server's).
 * @throws EchoStreamConfigError on a pattern that is no string, handlers of one stream and group
 *   with different options, or two patterns on one stream and group.
 */
export function patternRoutes(
  handlers: ReadonlyMap<string, MessageHandler>,
  group: string,
  streamOf: (pattern: string) => string,
): PatternRoute[] {
  const routes = new Map<string, PatternRoute & { optionsText: string }>();
  for (const [pattern, head] of handlers) {
    checkStringPattern(pattern);
    const stream = streamOf(pattern);
    for (const handler of chainOf(head)) {
      const { group: own, ...options } = (handler.extras ?? {}) as Record<string, unknown>;
      if (own !== undefined && (typeof own !== 'string' || own.length === 0))
        throw new EchoStreamConfigError(
          `EchoStreamServer: pattern '${pattern}': extras.group must be a non-empty string`,
        );
      const routeGroup = own ?? group;
      const key = `${stream}\u0000${routeGroup}`;
      const optionsText = JSON.stringify(options);
      const kind = handler.isEventHandler ? 'EventPattern' : 'MessagePattern';
      const existing = routes.get(key);
      if (!existing) {
        routes.set(key, {
          pattern,
          stream,
          group: routeGroup,
          request: !handler.isEventHandler,
          handlers: [handler],
          options: options as Partial<StreamHandlerOptions>,
          name: `@${kind}('${pattern}') in ${routeGroup}`,
          optionsText,
        });
        continue;
      }
      if (existing.pattern !== pattern)
        throw new EchoStreamConfigError(
          `EchoStreamServer: patterns '${existing.pattern}' and '${pattern}' both consume ` +
            `${stream}/${routeGroup}: use one pattern per stream and group`,
        );
      if (existing.optionsText !== optionsText)
        throw new EchoStreamConfigError(
          `EchoStreamServer: the handlers of '${pattern}' in group '${routeGroup}' run in one ` +
            `loop and must give the same options (${existing.optionsText} vs ${optionsText})`,
        );
      existing.handlers.push(handler);
    }
  }
  return [...routes.values()].map(({ optionsText: _, ...route }) => route);
}

/**
 * The handlers Nest chained on one pattern, each cut from the chain.
 * NOTE: Nest's `@EventPattern` wrapper calls `handler.next` (Nest 11 and 12); the chain is the
 * transport's own (it lives in its handler map), cut so that the loop of each group calls only
 * its handlers.
 */
function chainOf(head: MessageHandler): MessageHandler[] {
  const chain: MessageHandler[] = [];
  let handler: MessageHandler | undefined = head;
  while (handler) {
    chain.push(handler);
    const next = handler.next as MessageHandler | undefined;
    handler.next = undefined;
    handler = next;
  }
  return chain;
}

/** Nest keys an object pattern by its JSON text: a stream needs a name. */
function checkStringPattern(pattern: string): void {
  if (!pattern.startsWith('{') && !pattern.startsWith('[')) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(pattern);
  } catch {
    return;
  }
  if (typeof parsed === 'object' && parsed !== null)
    throw new EchoStreamConfigError(
      `EchoStreamServer: pattern ${pattern} is not a string: each pattern names a stream, so ` +
        `@EventPattern / @MessagePattern take a string here (e.g. 'orders.created')`,
    );
}
