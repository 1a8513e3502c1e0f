import { BadRequestException, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import { errorText } from '../codec/codecs';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import { partitionedGroupNames } from '../admin/partition-groups';
import { isInvalidStreamIdError, isWrongTypeError } from '../redis/redis-errors';
import { ConsumerStats } from '../stats/consumer-stats.service';
import type { PageQuery, RedriveBody } from './dashboard-input';
import { DASHBOARD_OPTIONS } from './dashboard.constants';
import type { ResolvedDashboardOptions } from './dashboard-options.interface';
import type {
  DeadLetterPageView,
  GroupView,
  OverviewView,
  PendingEntryView,
  PendingPageView,
  StreamView,
  TailEntryView,
  TailPageView,
} from './dashboard-views';
import { readDeadLetterPage } from './dead-letter-reader';
import { cutText, MAX_NAME_CHARS, PageBudget, previewFields } from './page-budget';
import { partitionedGroupViews } from './partitioned-group-view';
import { DeadLetterCounter } from './dead-letter-counts';
import { RateHistory } from './rate-history';

/** Entry bodies read per round trip for a PEL or tail page. */
const BODIES_PER_READ = 100;

/**
 * What the dashboard shows and changes, read through `ConsumerStats`, `EchoStreamAdmin` and the
 * Redis layer. Every list is one page (`count` rows after an id), never a whole PEL or stream.
 * Only the streams of the app's handlers and of the `streams` option can be read (internal).
 */
@Injectable()
export class DashboardService {
  private readonly logger = new Logger(DashboardService.name);
  private readonly rates = new RateHistory();
  private readonly deadLetterCounter = new DeadLetterCounter();

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

  async pending(stream: string, group: string, page: PageQuery): Promise<PendingPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const info = (await this.read(stream, () => client.groups(stream))).find(
      (g) => g.name === group,
    );
    if (!info) throw new NotFoundException(`stream '${stream}' has no group '${group}'`);
    const rows = await this.read(stream, () =>
      client.pending(stream, group, {
        start: page.after === undefined ? '-' : `(${page.after}`,
        end: '+',
        count: page.count,
      }),
    );
    const browser = client.browser();
    const out = new PageBudget<PendingEntryView>(page.count);
    // bodies a chunk at a time, each turned into a preview at once: a page of large entries
    // never sits whole in memory
    for (let i = 0; i < rows.length && !out.done; i += BODIES_PER_READ) {
      const chunk = rows.slice(i, i + BODIES_PER_READ);
      const bodies = await browser.entriesByIds(
        stream,
        chunk.map((row) => row.entryId),
      );
      for (const row of chunk) {
        const fields = bodies.get(row.entryId);
        const shown = fields ? previewFields(fields) : undefined;
        const consumer = cutText(row.consumer, MAX_NAME_CHARS);
        const view = {
          ...row,
          consumer: consumer.text,
          preview: shown?.text ?? null,
          cut: consumer.cut || shown?.cut === true,
        };
        if (!out.add(view)) break;
      }
    }
    return { stream, group, pending: info.pending, entries: out.entries, next: out.next };
  }

  async deadLetters(stream: string, page: PageQuery): Promise<DeadLetterPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const { entries, next } = await this.read(stream, () =>
      readDeadLetterPage(client, this.deadLetterStreams(stream), stream, page.count, page.after),
    );
    return { stream, entries, next };
  }

  async tail(stream: string, page: PageQuery): Promise<TailPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const browser = client.browser();
    const out = new PageBudget<TailEntryView>(page.count);
    let end = page.after === undefined ? '+' : `(${page.after}`;
    const length = await this.read(stream, () => client.length(stream));
    while (!out.done) {
      const want = Math.min(BODIES_PER_READ, page.count - out.entries.length);
      const batch = await this.read(stream, () => browser.revRange(stream, end, '-', want));
      for (const entry of batch) {
        const shown = previewFields(entry.fields ?? []);
        if (!out.add({ entryId: entry.entryId, preview: shown.text, cut: shown.cut })) break;
      }
      if (batch.length < want) break;
      end = `(${batch[batch.length - 1].entryId}`;
    }
    return { stream, length, entries: out.entries, next: out.next };
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
      // a partitioned stream has no stream of its name: its partitions make its group rows
      const partitioned = loops.some((l) => l.stream === stream && l.partitions)
        ? await partitionedGroupViews(client, stream, loops)
        : null;
      if (partitioned) {
        const { length, groups: views } = partitioned;
        return {
          stream,
          length,
          groups: views,
          deadLetters: 0,
          deadLettersExact: true,
          entriesAdded: null,
        };
      }
      const [length, groups] = await Promise.all([client.length(stream), client.groups(stream)]);
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
            ...inspection,
            deadLetters: letters?.byGroup.get(name) ?? 0,
            totalDuplicates: loop?.totalDuplicates ?? null,
            totalStale: loop?.totalStale ?? null,
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
    const all = await Promise.all(
      this.deadLetterStreams(stream).map((sink) =>
        this.deadLetterCounter.count(this.connections.client, sink, stream),
      ),
    );
    const byGroup = new Map<string, number>();
    for (const counts of all) {
      for (const [group, n] of counts.byGroup) byGroup.set(group, (byGroup.get(group) ?? 0) + n);
    }
    return {
      total: all.reduce((sum, c) => sum + c.total, 0),
      byGroup,
      exact: all.every((c) => c.exact),
    };
  }

  /**
   * The dead-letter streams of `stream`: those of this app's loops on it, else `${stream}:dlq`
   * (as `EchoStreamAdmin` reads them).
   */
  private deadLetterStreams(stream: string): string[] {
    const sinks = new Set<string>();
    for (const loop of this.registry.list()) {
      if (loop.stream === stream && loop.deadLetterStream !== false) {
        sinks.add(loop.deadLetterStream);
      }
    }
    if (sinks.size === 0) sinks.add(`${stream}:dlq`);
    return [...sinks];
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
