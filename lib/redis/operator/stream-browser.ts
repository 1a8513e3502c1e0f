import { type CommandLink, mapReply, parseEntry, parseReadReplies } from '../connection';
import type { RawEntry, StreamBrowsing, StreamCounters, StreamKeysPage } from '../stream-roles';

/** Deadline of one browsing command (the dashboard and the CLI wait for nothing longer). */
export const BROWSE_DEADLINE_MS = 5000;

/**
 * The read-only commands the dashboard and the CLI need beyond `StreamsClient`: newest-first
 * reads (XREVRANGE), the keyspace's stream keys (SCAN TYPE), a key's type. Single-node only for
 * SCAN (on a Cluster it scans the node ioredis picks); the rest are keyed and routed as usual.
 */
export class StreamBrowser implements StreamBrowsing {
  /** @param link the link of the client it browses through (its deadline rule applies). */
  constructor(private readonly link: CommandLink) {}

  /** XREVRANGE `stream` `end` `start` COUNT `count`: newest first; `end` may be exclusive (`'(1-0'`). */
  async revRange(stream: string, end: string, start: string, count: number): Promise<RawEntry[]> {
    const reply = (await this.call(['XREVRANGE', stream, end, start, 'COUNT', count])) as unknown[];
    return reply.map(parseEntry);
  }

  /**
   * The entries with ids `ids` (ascending, as a PEL page lists them), in at most two round trips
   * and usually one command: one XRANGE over the span first-last (COUNT twice the ids, so a
   * span mostly acked costs no more), then, for ids past a span that ran out, one pipeline of
   * XRANGE id id. An id the stream no longer holds maps to `null`.
   */
  async entriesByIds(
    stream: string,
    ids: readonly string[],
  ): Promise<Map<string, string[] | null>> {
    const found = new Map<string, string[] | null>();
    if (ids.length === 0) return found;
    const cap = ids.length * 2;
    const span = (await this.call([
      'XRANGE',
      stream,
      ids[0],
      ids[ids.length - 1],
      'COUNT',
      cap,
    ])) as unknown[];
    const wanted = new Set(ids);
    for (const entry of span.map(parseEntry)) {
      if (wanted.has(entry.entryId)) found.set(entry.entryId, entry.fields);
    }
    const complete = span.length < cap;
    const missing = complete ? [] : ids.filter((id) => !found.has(id));
    if (missing.length > 0) {
      const replies = await this.link.pipeline(
        'XRANGE pipeline',
        (pipeline) => {
          for (const id of missing) pipeline.xrange(stream, id, id, 'COUNT', 1);
        },
        BROWSE_DEADLINE_MS,
      );
      replies.forEach(([err, reply]) => {
        if (err) throw err;
        const [entry] = (reply as unknown[]).map(parseEntry);
        if (entry !== undefined) found.set(entry.entryId, entry.fields);
      });
    }
    for (const id of ids) if (!found.has(id)) found.set(id, null);
    return found;
  }

  /**
   * XREAD COUNT `count` BLOCK `blockMs` STREAMS `stream` `afterId` (no group): entries after
   * `afterId`, waiting up to `blockMs` for the first; `[]` when none came.
   */
  async readAfter(
    stream: string,
    afterId: string,
    blockMs: number,
    count: number,
  ): Promise<RawEntry[]> {
    return (await this.readAfterEach([[stream, afterId]], blockMs, count)).get(stream) ?? [];
  }

  /**
   * XREAD COUNT `count` BLOCK `blockMs` STREAMS `s1 s2 ... id1 id2 ...` (no group): each stream's
   * entries after its id, waiting up to `blockMs` for the first of any; by stream, streams that
   * got nothing absent. On a Cluster the streams must share a hash slot (one command).
   */
  async readAfterEach(
    cursors: ReadonlyArray<readonly [stream: string, afterId: string]>,
    blockMs: number,
    count: number,
  ): Promise<Map<string, RawEntry[]>> {
    const reply = (await this.call(
      [
        'XREAD',
        'COUNT',
        count,
        'BLOCK',
        blockMs,
        'STREAMS',
        ...cursors.map(([stream]) => stream),
        ...cursors.map(([, afterId]) => afterId),
      ],
      blockMs + BROWSE_DEADLINE_MS,
    )) as unknown;
    // RESP2 or RESP3, re-wrapped or a map: one reader for every shape (reply-shapes.ts)
    return reply === null ? new Map() : parseReadReplies(reply);
  }

  /**
   * The stream's `entries-added` (XINFO STREAM) and each group's `entries-read` (XINFO GROUPS):
   * counters that only grow, for rates of groups no loop of this app counts. `null` where the
   * server does not report them (Redis < 7, or a group whose read count it cannot tell).
   */
  async counters(stream: string): Promise<StreamCounters> {
    const [info, groups] = (await Promise.all([
      this.call(['XINFO', 'STREAM', stream]),
      this.call(['XINFO', 'GROUPS', stream]),
    ])) as [unknown, unknown[]];
    const entriesRead = new Map<string, number | null>();
    for (const group of groups) {
      const fields = mapReply(group);
      const read = fields.get('entries-read');
      entriesRead.set(
        String(fields.get('name')),
        read === undefined || read === null ? null : Number(read),
      );
    }
    const added = mapReply(info).get('entries-added');
    return {
      entriesAdded: added === undefined || added === null ? null : Number(added),
      entriesRead,
    };
  }

  /** One SCAN step over keys of type stream (Redis >= 6). */
  async scanStreams(cursor: string, count: number): Promise<StreamKeysPage> {
    const reply = (await this.call(['SCAN', cursor, 'COUNT', count, 'TYPE', 'stream'])) as [
      string,
      string[],
    ];
    return { cursor: String(reply[0]), keys: reply[1].map(String) };
  }

  /** TYPE of `key`: `'none'` when it does not exist. */
  async keyType(key: string): Promise<string> {
    return String(await this.call(['TYPE', key]));
  }

  private call(args: Array<string | number>, deadlineMs = BROWSE_DEADLINE_MS): Promise<unknown> {
    return this.link.send(args, deadlineMs);
  }
}
