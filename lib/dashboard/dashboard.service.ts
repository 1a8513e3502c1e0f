import { BadRequestException, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import { errorText } from '../codec/codecs';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import { partitionedGroupNames } from '../admin/partition-groups';
import { isInvalidStreamIdError, isWrongTypeError } from '../redis/redis-errors';
import { ConsumerStats } from '../stats/consumer-stats.service';
import type { PageQuery, RedriveBody } from './http/dashboard-input';
import { DASHBOARD_OPTIONS } from './dashboard.constants';
import type { ResolvedDashboardOptions } from './dashboard-options.interface';
import type {
  DeadLetterPageView,
  GroupView,
  OverviewView,
  PendingPageView,
  StreamView,
  TailPageView,
} from './views/dashboard-views';
import { readDeadLetterPage } from './views/dead-letter-reader';
import type { DeadLetterScope } from '../codec/dead-letter-scope';
import { readDeadLetterScope } from '../admin/dead-letter-operations';
import { NoSuchGroup, pendingPage, tailPage } from './views/list-pages';
import { PageCursorError, readPageCursor } from '../stats/partition-pages';
import { partitionedStreamView } from './views/partitioned-group-view';
import { storedCountOf } from '../stats/partitioned-inspection';
import { RateHistory } from './views/rate-history';

/**
 * What the dashboard shows and changes, read through `ConsumerStats`, `EchoStreamAdmin` and the
 * Redis layer. Every list is one page (`count` rows after an id), never a whole PEL or stream.
 * Only the streams of the app's handlers and of the `streams` option can be read (internal).
 */
@Injectable()
export class DashboardService {
  private readonly logger = new Logger(DashboardService.name);
  private readonly rates = new RateHistory();

  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly stats: ConsumerStats,
    private readonly admin: EchoStreamAdmin,
    private readonly connections: EchoStreamConnections,
    private readonly registry: ConsumerRegistry,
  ) {}

  /** The streams shown: the app's handlers' streams and the `streams` option's, sorted by name. */
  streams(): string[] {
    const names = new Set(this.options.streams);
    for (const loop of this.stats.snapshot()) names.add(loop.stream);
    return [...names].sort();
  }

  async overview(): Promise<OverviewView> {
    const loops = this.stats.snapshot();
    const now = Date.now();
    const streams = await Promise.all(this.streams().map((s) => this.streamView(s, loops, now)));
    return { at: new Date(now).toISOString(), readOnly: this.options.readOnly, streams };
  }

  /**
   * One page of `group`'s PEL on `stream`; a partitioned stream's PELs merged oldest first, each
   * row with its partition, `after` then `<entry id>@<partition>` (docs/operations.md "Dashboard").
   */
  async pending(stream: string, group: string, page: PageQuery): Promise<PendingPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const partitions = await this.read(stream, () => storedCountOf(client.partitions, stream));
    const query = { count: page.count, after: this.cursorOf(page, partitions) };
    try {
      return await this.read(stream, () => pendingPage(client, stream, partitions, group, query));
    } catch (err) {
      if (err instanceof NoSuchGroup) {
        throw new NotFoundException(`stream '${stream}' has no group '${group}'`);
      }
      throw err;
    }
  }

  async deadLetters(stream: string, page: PageQuery): Promise<DeadLetterPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    // an id of the dead-letter stream: one stream, a partitioned stream's too
    const after = this.cursorOf(page, null)?.entryId;
    const { entries, next } = await this.read(stream, async () => {
      const scope = await this.scopeOf(stream);
      const sinks = this.registry.deadLetterStreamsOf(scope.stream);
      return readDeadLetterPage(client, sinks, scope, page.count, after);
    });
    return { stream, entries, next };
  }

  /**
   * One page of `stream`'s entries, newest first; a partitioned stream's partitions merged, each
   * row with its partition, `after` then `<entry id>@<partition>`.
   */
  async tail(stream: string, page: PageQuery): Promise<TailPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const partitions = await this.read(stream, () => storedCountOf(client.partitions, stream));
    const query = { count: page.count, after: this.cursorOf(page, partitions) };
    return this.read(stream, () => tailPage(client, stream, partitions, query));
  }

  /**
   * Pauses or resumes `group` on `stream` for every process through `EchoStreamAdmin`
   * (docs/operations.md "Pausing a group"); the group must exist.
   */
  async setPaused(
    stream: string,
    group: string,
    paused: boolean,
  ): Promise<{ stream: string; group: string; paused: boolean }> {
    this.assertKnown(stream);
    const client = this.connections.client;
    // a partitioned stream: its group on any partition (the loops read the flag of the name)
    const groups = await this.read(
      stream,
      async () =>
        (await partitionedGroupNames(client, stream)) ??
        (await client.groups(stream)).map((g) => g.name),
    );
    if (!groups.includes(group)) {
      throw new NotFoundException(`stream '${stream}' has no group '${group}'`);
    }
    await this.read(stream, async () => {
      if (paused) await this.admin.pause(stream, group);
      else await this.admin.resume(stream, group);
    });
    this.logger.log(`Dashboard ${paused ? 'paused' : 'resumed'} group '${group}' on '${stream}'`);
    return { stream, group, paused };
  }

  /** Redrives dead letters through `EchoStreamAdmin.redrive` (copy before delete). */
  async redrive(stream: string, body: RedriveBody): Promise<{ stream: string; redriven: number }> {
    this.assertKnown(stream);
    const redriven = await this.read(stream, () => this.admin.redrive(stream, body));
    this.logger.log(`Dashboard redrove ${redriven} dead letter(s) of '${stream}'`);
    return { stream, redriven };
  }

  async deleteDeadLetters(
    stream: string,
    entryIds: string[],
  ): Promise<{ stream: string; deleted: string[] }> {
    this.assertKnown(stream);
    const deleted = await this.read(stream, () => this.admin.deleteDeadLetters(stream, entryIds));
    this.logger.log(`Dashboard deleted ${deleted.length} dead letter(s) of '${stream}'`);
    return { stream, deleted };
  }

  private async streamView(
    stream: string,
    loops: ConsumerSnapshot[],
    now: number,
  ): Promise<StreamView> {
    const client = this.connections.client;
    try {
      const [length, groups] = await Promise.all([client.length(stream), client.groups(stream)]);
      // a partitioned stream has no stream of its name: its partitions make its rows
      const partitions =
        groups.length === 0 ? await storedCountOf(client.partitions, stream) : null;
      if (partitions !== null) {
        const sources = {
          client,
          leases: client.partitions,
          letters: (name: string, count: number) =>
            this.stats.deadLetterCounts({ asked: name, stream: name, partitions: count }),
          rates: this.rates,
        };
        return await partitionedStreamView(sources, stream, partitions, loops, now);
      }
      const counters = groups.length > 0 ? await client.browser().counters(stream) : undefined;
      const letters = groups.length > 0 ? await this.deadLetterCounts(stream) : undefined;
      const streamIn = this.rates.rateOf(`${stream}\u0000in`, counters?.entriesAdded ?? null, now);
      // one MGET for the pause flags of every group of the stream (they share its hash slot)
      const pausedSince = await client.pauses.pausedSince(
        groups.map(({ name }) => ({ stream, group: name })),
      );
      const views = await Promise.all(
        groups.map(async ({ name, lastDeliveredId }, index): Promise<GroupView> => {
          const since = pausedSince[index];
          const inspection = await this.stats.inspect(stream, name);
          const loop = loops.find((l) => l.stream === stream && l.group === name);
          // this app's loop counts its own rates; for any other group, the stream's entries
          // added and the group's entries delivered per second (Redis >= 7)
          const tpsIn = loop ? loop.tpsIn : streamIn;
          const tpsOut = loop
            ? loop.tpsOut
            : this.rates.rateOf(
                `${stream}\u0000${name}\u0000read`,
                // a group that never read reports no count
                counters?.entriesRead.get(name) ?? (lastDeliveredId === '0-0' ? 0 : null),
                now,
              );
          return {
            group: name,
            state: loop?.state ?? null,
            pausedSince:
              since === null || since === undefined ? null : new Date(since).toISOString(),
            handler: loop?.handler ?? null,
            lastDeliveredId,
            consumers: inspection.consumers,
            pending: inspection.pending,
            lag: inspection.lag,
            oldestPendingMs: inspection.oldestPendingMs,
            deadLetters: letters?.byGroup.get(name) ?? 0,
            totalDuplicates: loop?.totalDuplicates ?? null,
            totalStale: loop?.totalStale ?? null,
            totalFenced: loop?.totalFenced ?? null,
            tpsIn,
            tpsOut,
            sparkline:
              tpsIn !== null && tpsOut !== null
                ? this.rates.record(stream, name, tpsIn, tpsOut, now)
                : { tpsIn: [], tpsOut: [] },
          };
        }),
      );
      return {
        stream,
        length,
        groups: views,
        deadLetters: letters?.total ?? 0,
        deadLettersExact: letters?.exact ?? true,
        entriesAdded: counters?.entriesAdded ?? null,
      };
    } catch (err) {
      const error = errorText(err);
      return {
        stream,
        length: 0,
        groups: [],
        deadLetters: 0,
        deadLettersExact: true,
        entriesAdded: null,
        error,
      };
    }
  }

  /** The stream's dead letters by group, summed over its dead-letter streams. */
  private async deadLetterCounts(
    stream: string,
  ): Promise<{ total: number; byGroup: Map<string, number>; exact: boolean }> {
    return this.stats.deadLetterCounts(await this.scopeOf(stream));
  }

  /**
   * Which letters `stream` names (a partition's name: the letters of that partition of its
   * partitioned stream), as `EchoStreamAdmin` reads them.
   */
  private scopeOf(stream: string): Promise<DeadLetterScope> {
    return readDeadLetterScope(this.connections.client, stream);
  }

  /**
   * `?after=` checked against the list it pages: an entry id, `<entry id>@<partition>` on a
   * partitioned stream (`partitions` its count); anything else is a 400.
   */
  private cursorOf(
    page: PageQuery,
    partitions: number | null,
  ): { entryId: string; partition?: number } | undefined {
    if (page.after === undefined) return undefined;
    try {
      return readPageCursor(page.after, partitions);
    } catch (err) {
      if (err instanceof PageCursorError) throw new BadRequestException(err.message);
      throw err;
    }
  }

  /** Only streams the dashboard shows may be read or changed through it. */
  private assertKnown(stream: string): void {
    if (!this.streams().includes(stream)) {
      throw new BadRequestException(`unknown stream '${stream}': the dashboard does not show it`);
    }
  }

  /**
   * Runs a read of `stream`, turning a WRONGTYPE reply into a 400 naming the stream and a refused
   * entry id into a 400 naming `after`, the one id a read takes from the request.
   */
  private async read<T>(stream: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (isWrongTypeError(err)) throw new BadRequestException(`'${stream}' is not a stream`);
      if (isInvalidStreamIdError(err)) {
        throw new BadRequestException(`after: Redis refused it (${(err as Error).message})`);
      }
      throw err;
    }
  }
}
