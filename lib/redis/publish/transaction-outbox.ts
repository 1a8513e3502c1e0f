import type { StreamQueries, StreamWrites } from '../stream-roles';
import type { IdempotentWrites } from './idempotent-roles';
import type { MalformedOutboxItem, OutboxItem, TransactionOutboxes } from './outbox-roles';

/** The fields an outbox entry starts with: its target stream, then its branded id. */
const TARGET_FIELD = 'echo-target';
const ID_FIELD = 'echo-id';

/**
 * The outbox entry of a publish to `target` of the entry `fields` with branded id `id`: the target
 * and the id, then the entry's own fields.
 */
export function outboxFieldsOf(target: string, id: string, fields: readonly string[]): string[] {
  return [TARGET_FIELD, target, ID_FIELD, id, ...fields];
}

/** An outbox entry read back: the item to forward, or why it cannot be. */
function itemOf(outboxId: string, flat: readonly string[]): OutboxItem | MalformedOutboxItem {
  const [targetField, target, idField, id] = flat;
  if (targetField !== TARGET_FIELD || !target || idField !== ID_FIELD || !id)
    return { outboxId, malformed: `it does not start with ${TARGET_FIELD} and ${ID_FIELD}` };
  const fields = flat.slice(4);
  if (fields.length === 0) return { outboxId, malformed: 'it has no fields to publish' };
  return { outboxId, target, id, fields };
}

/**
 * The outboxes, on the client's own commands: XRANGE (`StreamQueries.range`), the producer's
 * idempotent write (`IdempotentWrites.addIdempotent`) and XDEL (`StreamWrites.remove`).
 */
export class RedisTransactionOutboxes implements TransactionOutboxes {
  constructor(
    private readonly queries: Pick<StreamQueries, 'range'>,
    private readonly writes: Pick<IdempotentWrites, 'addIdempotent'> & Pick<StreamWrites, 'remove'>,
  ) {}

  async read(
    outbox: string,
    after: string,
    count: number,
  ): Promise<Array<OutboxItem | MalformedOutboxItem>> {
    const start = after === '-' ? '-' : `(${after}`;
    const entries = await this.queries.range(outbox, start, '+', count);
    return entries.map(({ entryId, fields }) => itemOf(entryId, fields ?? []));
  }

  async forward(target: string, items: readonly OutboxItem[], windowMs: number): Promise<void> {
    await this.writes.addIdempotent(target, items, windowMs);
  }

  async remove(outbox: string, outboxIds: readonly string[]): Promise<void> {
    await this.writes.remove(outbox, outboxIds);
  }
}
