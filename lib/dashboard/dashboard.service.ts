import { BadRequestException, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import { EchoStreamAdmin } from '../admin/echo-stream-admin.service';
import { errorText } from '../codec/codecs';
import { fieldsText } from '../codec/fields-text';
import { EchoStreamConnections } from '../echo-stream.connections';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import { StreamBrowser } from '../redis/stream-browser';
import { isWrongTypeError } from '../redis/streams-client';
import { ConsumerStats } from '../stats/consumer-stats.service';
import type { PageQuery, RedriveBody } from './dashboard-input';
import { DASHBOARD_OPTIONS, PREVIEW_CHARS } from './dashboard.constants';
import type { ResolvedDashboardOptions } from './dashboard-options.interface';
import type {
  DeadLetterPageView,
  GroupView,
  OverviewView,
  PendingPageView,
  StreamView,
  TailPageView,
} from './dashboard-views';
import { RateHistory } from './rate-history';

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
    const rows = await client.pending(stream, group, {
      start: page.after === undefined ? '-' : `(${page.after}`,
      end: '+',
      count: page.count,
    });
    const bodies = await Promise.all(
      rows.map((row) => client.range(stream, row.entryId, row.entryId, 1)),
    );
    return {
      stream,
      group,
      pending: info.pending,
      entries: rows.map((row, i) => {
        const fields = bodies[i][0]?.fields;
        return { ...row, preview: fields ? preview(fields) : null };
      }),
      next: rows.length === page.count ? rows[rows.length - 1].entryId : null,
    };
  }

  async deadLetters(stream: string, page: PageQuery): Promise<DeadLetterPageView> {
    this.assertKnown(stream);
    const letters = await this.read(stream, () =>
      this.admin.deadLetters(stream, { count: page.count, after: page.after }),
    );
    return {
      stream,
      entries: letters.map((letter) => ({
        entryId: letter.entryId,
        deadLetterStream: letter.deadLetterStream,
        reason: letter.reason,
        error: letter.error ?? null,
        group: letter.group,
        sourceEntryId: letter.sourceEntryId,
        attempts: letter.attempts,
        at: letter.at.toISOString(),
        preview: preview(Object.entries(letter.fields).flat()),
      })),
      next: letters.length === page.count ? letters[letters.length - 1].entryId : null,
    };
  }

  async tail(stream: string, page: PageQuery): Promise<TailPageView> {
    this.assertKnown(stream);
    const client = this.connections.client;
    const browser = new StreamBrowser(client.connection);
    const [length, entries] = await this.read(stream, () =>
      Promise.all([
        client.length(stream),
        browser.revRange(
          stream,
          page.after === undefined ? '+' : `(${page.after}`,
          '-',
          page.count,
        ),
      ]),
    );
    return {
      stream,
      length,
      entries: entries.map((e) => ({ entryId: e.entryId, preview: preview(e.fields ?? []) })),
      next: entries.length === page.count ? entries[entries.length - 1].entryId : null,
    };
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
      const counters =
        groups.length > 0 ? await new StreamBrowser(client.connection).counters(stream) : undefined;
      const streamIn = this.rates.rateOf(`${stream}\u0000in`, counters?.entriesAdded ?? null, now);
      const views = await Promise.all(
        groups.map(async ({ name, lastDeliveredId }): Promise<GroupView> => {
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
            handler: loop?.handler ?? null,
            lastDeliveredId,
            ...inspection,
            tpsIn,
            tpsOut,
            sparkline:
              tpsIn !== null && tpsOut !== null
                ? this.rates.record(stream, name, tpsIn, tpsOut, now)
                : { tpsIn: [], tpsOut: [] },
          };
        }),
      );
      const deadLetters = Math.max(0, ...views.map((g) => g.deadLetters));
      const entriesAdded = counters?.entriesAdded ?? null;
      return { stream, length, groups: views, deadLetters, entriesAdded };
    } catch (err) {
      const error = errorText(err);
      return { stream, length: 0, groups: [], deadLetters: 0, entriesAdded: null, error };
    }
  }

  /** Only streams the dashboard shows may be read or changed through it. */
  private assertKnown(stream: string): void {
    if (!this.streams().includes(stream)) {
      throw new BadRequestException(`unknown stream '${stream}': the dashboard does not show it`);
    }
  }

  /** Runs a read of `stream`, turning a WRONGTYPE reply into a 400 naming the stream. */
  private async read<T>(stream: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (isWrongTypeError(err)) throw new BadRequestException(`'${stream}' is not a stream`);
      throw err;
    }
  }
}

/** `k=v k=v` of a flat field list, cut at PREVIEW_CHARS characters. Plain text, never markup. */
export function preview(fields: readonly string[]): string {
  const text = fieldsText(fields);
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}
