import { compareEntryIds } from '../../codec/entry-id';
import type { CommandLink } from '../connection';
import { recordKeyHeads, type RecordKeyHeads } from '../package-keys';
import type { AlongAck, SkipRecord } from './ack-roles';
import { withAlong } from './along-acks';
import type { CommitVerdict, CommitWrite, EntryCommit, EntryCommits } from './commit-roles';
import { COMMIT_COUNTER_LIMIT, ENTRY_COMMIT_SCRIPT, ENTRY_COMMIT_SHA } from './entry-commit.script';

/**
 * Exactly-once commits (docs/ARCHITECTURE.md "Exactly-once commits"): the writes of entries and
 * their XACKs in one script call ({@link ENTRY_COMMIT_SCRIPT}), each entry fenced by its owner
 * and delivery count and written all or nothing. Every key must be in the source stream's hash
 * slot on a Cluster (the script declares them; Redis refuses a call across slots).
 */
export class RedisEntryCommits implements EntryCommits {
  /** @param cluster true on a Redis Cluster (see {@link EntryCommits.cluster}). */
  constructor(
    private readonly link: CommandLink,
    readonly cluster = false,
  ) {}

  /**
   * Commits `entries` of `stream` for `consumer` of `group`, in the order given (each sees the
   * writes of those before it), in one round trip, `along` right behind it.
   * @throws TypeError for a malformed write (nothing is sent).
   */
  async commit(
    stream: string,
    group: string,
    consumer: string,
    entries: readonly EntryCommit[],
    along: readonly AlongAck[] = [],
  ): Promise<CommitVerdict[]> {
    if (entries.length === 0) return [];
    const keys = new Map<string, number>([[stream, 1]]);
    const indexOf = (key: string): number => {
      let index = keys.get(key);
      if (index === undefined) keys.set(key, (index = keys.size + 1));
      return index;
    };
    let lowest = entries[0].entryId;
    let highest = lowest;
    for (const { entryId } of entries) {
      if (compareEntryIds(entryId, lowest) < 0) lowest = entryId;
      if (compareEntryIds(entryId, highest) > 0) highest = entryId;
    }
    const heads = recordKeyHeads(stream, group);
    const argv: Array<string | number> = [group, consumer, entries.length, lowest, highest];
    for (const { entryId, deliveries, writes, records = [] } of entries) {
      argv.push(entryId, deliveries, writes.length + records.length);
      for (const write of writes) argv.push(...operationOf(write, indexOf(write.key)));
      for (const record of records) {
        const key = recordKeyOf(heads, record);
        argv.push(record.kind === 'acked' ? 'seen' : 'max', indexOf(key), 2, record.id);
        argv.push(record.ttlMs);
      }
    }
    const sent = this.link.sendScript(ENTRY_COMMIT_SCRIPT, ENTRY_COMMIT_SHA, [
      keys.size,
      ...keys.keys(),
      ...argv,
    ]);
    const reply = await withAlong(this.link, stream, group, sent, along);
    return (reply as string[]).map((verdict, i) => verdictOf(entries[i].entryId, verdict));
  }
}

/** Where a skip record lives (the skip records' script writes the same keys). */
function recordKeyOf(heads: RecordKeyHeads, record: SkipRecord): string {
  return record.kind === 'acked' ? heads.acked + record.id : heads.newest + record.key;
}

/** The script's arguments of one write: name, key index, how many arguments, the arguments. */
function operationOf(write: CommitWrite, key: number): Array<string | number> {
  switch (write.op) {
    case 'xadd':
      if (write.fields.length === 0 || write.fields.length % 2 !== 0)
        throw new TypeError(
          `XADD to ${write.key}: fields come in field, value pairs, at least one (got ${write.fields.length} strings)`,
        );
      return ['xadd', key, write.fields.length, ...write.fields];
    case 'set':
      if (write.pxMs !== undefined && !(Number.isSafeInteger(write.pxMs) && write.pxMs > 0))
        throw new TypeError(
          `SET ${write.key}: pxMs must be a positive integer (got ${write.pxMs})`,
        );
      return ['set', key, 2, write.value, write.pxMs ?? 0];
    case 'incrBy':
      if (!Number.isSafeInteger(write.by) || Math.abs(write.by) > COMMIT_COUNTER_LIMIT)
        throw new TypeError(
          `INCRBY ${write.key}: the increment must be an integer of at most 15 digits (got ${write.by})`,
        );
      return ['incrby', key, 1, write.by];
    case 'hset':
      return ['hset', key, 2, write.field, write.value];
    case 'del':
      return ['del', key, 0];
  }
}

/** One entry's verdict from the script's reply (`ok`, `fenced:<why>`, `invalid:<why>`). */
function verdictOf(entryId: string, reply: string): CommitVerdict {
  if (reply === 'ok') return { entryId, outcome: 'committed' };
  if (reply === 'duplicate') return { entryId, outcome: 'duplicate' };
  const at = reply.indexOf(':');
  const outcome = reply.slice(0, at) === 'fenced' ? 'fenced' : 'invalid';
  return { entryId, outcome, why: reply.slice(at + 1) };
}
