/**
 * How a keyed entry finds its partition (docs/partitions.md "Wire format"): partition
 * `crc32(utf8(key)) mod count` of a partitioned stream `s` is the Redis stream `s:p:<index>`, and
 * the key rides in the entry's `pkey` field. CRC-32 is the IEEE one of zlib, gzip and PNG
 * (Python: `zlib.crc32(key.encode()) % count`), so any producer can route the same way.
 */

/** The entry field that carries the partition key. */
export const PARTITION_KEY_FIELD = 'pkey';

/** The table of the reflected IEEE polynomial 0xEDB88320, built once. */
const CRC_TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE, as zlib's `crc32`) of the UTF-8 bytes of `text`, as an unsigned integer. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The partition (0..count-1) of `key` among `count` partitions: `crc32(key) mod count`. */
export function partitionOf(key: string, count: number): number {
  return crc32(key) % count;
}

/** The Redis stream of partition `index` of the partitioned stream `stream`: `<stream>:p:<index>`. */
export function partitionStreamOf(stream: string, index: number): string {
  return `${stream}:p:${index}`;
}

/** The partition key an entry carries (its `pkey` field), if any. */
export function partitionKeyOf(flat: readonly string[]): string | undefined {
  for (let i = 0; i + 1 < flat.length; i += 2)
    if (flat[i] === PARTITION_KEY_FIELD) return flat[i + 1];
  return undefined;
}

/** The most partitions a stream may have. */
export const MAX_PARTITIONS = 1024;

/** True for a valid partition count: an integer from 1 to {@link MAX_PARTITIONS}. */
export function isPartitionCount(value: unknown): value is number {
  return (
    typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_PARTITIONS
  );
}

/**
 * The partitioned stream a partition's stream belongs to: `<stream>` of `<stream>:p:<index>`;
 * `partitionStream` itself when it is not named so.
 */
export function partitionedStreamOf(partitionStream: string, index: number): string {
  const suffix = `:p:${index}`;
  return partitionStream.endsWith(suffix)
    ? partitionStream.slice(0, -suffix.length)
    : partitionStream;
}

/**
 * The partitioned stream and partition a name would be by `partitionStreamOf`'s scheme
 * (`orders:p:3` -> `orders`, 3); `undefined` for a name not of that form. Whether `stream` is a
 * partitioned stream (and has that many partitions) is its stored count's say.
 */
export function partitionNameOf(name: string): { stream: string; index: number } | undefined {
  const at = name.lastIndexOf(':p:');
  if (at <= 0) return undefined;
  const index = partitionIndexOf(name.slice(at + 3));
  return index === undefined ? undefined : { stream: name.slice(0, at), index };
}

/** A partition index written as text (`'3'`, as `String(index)` writes it); `undefined` else. */
export function partitionIndexOf(text: string | undefined): number | undefined {
  return text !== undefined && /^(0|[1-9]\d{0,3})$/.test(text) ? Number(text) : undefined;
}
