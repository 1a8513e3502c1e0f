import type { ParsedDeadLetter } from './dead-letter-fields';
import {
  PARTITION_KEY_FIELD,
  partitionKeyOf,
  partitionNameOf,
  partitionOf,
  partitionStreamOf,
} from './partition-key';

/**
 * Which letters of a dead-letter stream a stream name asks for, and where a redrive sends each
 * (docs/dead-letters.md "Redrive, list, delete"):
 * - a plain stream: the letters whose `dlq_stream` is its name (or that name none);
 * - a partitioned stream `s` by its own name: the letters of every partition, `dlq_stream` `s`,
 *   and those written before a partitioned stream had one dead-letter stream, whose `dlq_stream`
 *   is a partition's name `s:p:<i>`;
 * - one partition by its stream's name `s:p:<i>`: the letters of `s` from partition `i`.
 */
export interface DeadLetterScope {
  /** The name asked for. */
  readonly asked: string;
  /** The stream the letters are of: a partitioned stream's own name, also asked by a partition. */
  readonly stream: string;
  /** The stored partition count of a partitioned stream; `null` for a plain stream. */
  readonly partitions: number | null;
  /** Asked by a partition's name: only the letters of this partition. */
  readonly partition?: number;
}

/** Where a letter comes from, as its scope reads it. */
export interface LetterSource {
  /** The source stream (a partitioned stream's own name, for a legacy letter too). */
  readonly stream: string;
  /** The partition it came from (an older letter: from its `dlq_stream`); `undefined`: unknown. */
  readonly partition: number | undefined;
}

/**
 * The scope of `asked`: a partitioned stream when a partition count is stored for it, one
 * partition when it is named `<s>:p:<i>` and `s` has a stored count above `i`, else a plain
 * stream. `storedCount` reads a stream's stored partition count (`null`: none).
 */
export async function deadLetterScope(
  asked: string,
  storedCount: ((stream: string) => Promise<number | null>) | undefined,
): Promise<DeadLetterScope> {
  if (!storedCount) return { asked, stream: asked, partitions: null };
  const count = await storedCount(asked);
  if (count !== null) return { asked, stream: asked, partitions: count };
  const named = partitionNameOf(asked);
  if (named) {
    const of = await storedCount(named.stream);
    if (of !== null && named.index < of)
      return { asked, stream: named.stream, partitions: of, partition: named.index };
  }
  return { asked, stream: asked, partitions: null };
}

/** Where `letter` comes from when it belongs to `scope`; `undefined` when it does not. */
export function letterSource(
  scope: DeadLetterScope,
  letter: Pick<ParsedDeadLetter, 'stream' | 'partition'>,
): LetterSource | undefined {
  if (scope.partitions === null) {
    if (letter.stream !== undefined && letter.stream !== scope.asked) return undefined;
    return { stream: scope.asked, partition: letter.partition };
  }
  let partition = letter.partition;
  if (letter.stream !== undefined && letter.stream !== scope.stream) {
    // written before the stream's letters named the stream: `dlq_stream` is the partition's
    const legacy = partitionNameOf(letter.stream);
    if (legacy?.stream !== scope.stream) return undefined;
    partition ??= legacy.index;
  }
  if (scope.partition !== undefined && partition !== scope.partition) return undefined;
  return { stream: scope.stream, partition };
}

/** Where a redrive sends a letter, with the fields it writes there. */
export interface RedriveTarget {
  readonly stream: string;
  readonly fields: readonly string[];
}

/**
 * Where a redrive sends `letter` of `scope`: a plain stream's letter back to the stream; a
 * partitioned stream's to the partition of its key (`crc32(key) mod` the stored count, its `pkey`
 * field kept, or restored from `dlq_key`), else to the partition it came from. `undefined` when
 * it has no original fields, or no key and no partition within the count: a redrive leaves it in
 * place rather than write it to a stream nobody reads.
 */
export function redriveTarget(
  scope: DeadLetterScope,
  letter: Pick<ParsedDeadLetter, 'original' | 'key'>,
  source: LetterSource,
): RedriveTarget | undefined {
  const { original } = letter;
  if (original.length === 0) return undefined;
  if (scope.partitions === null) return { stream: scope.asked, fields: original };
  const carried = partitionKeyOf(original);
  const key = carried ?? letter.key;
  if (key !== undefined) {
    return {
      stream: partitionStreamOf(scope.stream, partitionOf(key, scope.partitions)),
      fields: carried === undefined ? [...original, PARTITION_KEY_FIELD, key] : original,
    };
  }
  if (source.partition !== undefined && source.partition < scope.partitions)
    return { stream: partitionStreamOf(scope.stream, source.partition), fields: original };
  return undefined;
}
