import type { ResolvedHandlerOptions } from '../config/handler-definitions';
import { partitionStreamOf } from '../codec/partition-key';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { StreamQueries } from '../redis/stream-roles';

/** A planned handler, as the checks below read it. */
interface PlannedHandler {
  readonly definition: { readonly stream: string; readonly group: string; readonly name: string };
  readonly options: Pick<ResolvedHandlerOptions, 'deleteOnAck' | 'partitions'>;
}

const SEE = 'docs/delivery.md "Deleting acknowledged entries"';

/**
 * What `deleteOnAck` is refused with before Redis is asked: an archive handler of the stream (it
 * must read what the groups acknowledged), and with `true` another handler of the app consuming
 * the stream as another group (its entries would go before that group read them).
 * @throws EchoStreamConfigError naming the handler, the stream and the conflict.
 */
export function checkDeleteOnAckPlan(
  handlers: readonly PlannedHandler[],
  archiveOf: (stream: string) => { readonly name: string } | undefined,
): void {
  for (const { definition, options } of handlers) {
    if (options.deleteOnAck === false) continue;
    const { stream, group, name } = definition;
    const archive = archiveOf(stream);
    if (archive)
      throw new EchoStreamConfigError(
        `${name}: deleteOnAck on stream '${stream}' with the archive handler ${archive.name}: ` +
          `the archive reads what the groups acknowledged; drop one of them (${SEE})`,
      );
    if (options.deleteOnAck !== true) continue;
    const other = handlers.find(
      (h) => h.definition.stream === stream && h.definition.group !== group,
    );
    if (other)
      throw new EchoStreamConfigError(
        `${name}: deleteOnAck: true on stream '${stream}', which ${other.definition.name} consumes ` +
          `as group '${other.definition.group}'; use deleteOnAck: 'acked-by-all' (${SEE})`,
      );
  }
}

/**
 * `deleteOnAck: true` is refused when the stream (each partition of a partitioned one) already
 * has another group in Redis: its entries would be removed before that group read them.
 * @throws EchoStreamConfigError naming the handler, the stream and the other groups.
 */
export async function checkDeleteOnAckGroups(
  queries: Pick<StreamQueries, 'groups'>,
  handlers: readonly PlannedHandler[],
): Promise<void> {
  for (const { definition, options } of handlers) {
    if (options.deleteOnAck !== true) continue;
    const { stream, group, name } = definition;
    const streams =
      options.partitions === null
        ? [stream]
        : Array.from({ length: options.partitions }, (_, i) => partitionStreamOf(stream, i));
    for (const each of streams) {
      const others = (await queries.groups(each)).map((g) => g.name).filter((g) => g !== group);
      if (others.length > 0)
        throw new EchoStreamConfigError(
          `${name}: deleteOnAck: true on stream '${each}', which also has group(s) ` +
            `${others.map((g) => `'${g}'`).join(', ')}; use deleteOnAck: 'acked-by-all' (${SEE})`,
        );
    }
  }
}
