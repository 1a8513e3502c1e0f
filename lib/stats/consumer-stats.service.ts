import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { errorText } from '../codec/codecs';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ECHO_STREAM_LIFECYCLE } from '../config/constants';
import type { EchoStreamLifecycle } from '../runtime/echo-stream.lifecycle';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import type { ConsumerSnapshot, GroupInspection } from '../interfaces/consumer-snapshot.interface';
import type { RedisLinkStatus } from '../interfaces/redis-server.interface';
import type { ServerFeatureReport } from '../interfaces/redis-server.interface';
import type { PartitionLeases } from '../redis/stream-roles';
import type { RetentionReport } from '../interfaces/lifecycle.interface';
import { entryIdMs } from '../codec/entry-id';
import { deadLetterStreamOf } from '../codec/dead-letter-fields';
import { partitionNameOf } from '../codec/partition-key';
import type { DeadLetterScope } from '../codec/dead-letter-scope';
import { DeadLetterCounter, sumCounts, type DeadLetterCounts } from './dead-letter-counter';
import { inspectPartitioned, storedCountOf } from './partitioned-inspection';
import { groupKey, renderPrometheus, type MetricFigures } from './prometheus';

/** The group gauges of `prometheus()` are refreshed from Redis at most this often. */
const GROUP_FIGURES_MAX_AGE_MS = 1000;

/**
 * Figures of the handler loops: `snapshot()` / `get()` read counters the loops own (no I/O),
 * `inspect()` asks Redis about a group, `prometheus()` renders the counters for a `/metrics`
 * endpoint (serve it with `PROMETHEUS_CONTENT_TYPE`).
 */
@Injectable()
export class ConsumerStats {
  private readonly logger = new Logger(ConsumerStats.name);
  /** The last `inspect()` of each group, for the group gauges of `prometheus()`. */
  private readonly inspections = new Map<string, GroupInspection>();
  private refreshing: Promise<void> | null = null;
  private refreshedAt = 0;
  private readonly deadLetterCounter = new DeadLetterCounter();

  constructor(
    private readonly registry: ConsumerRegistry,
    private readonly connections: EchoStreamConnections,
    @Optional()
    @Inject(ECHO_STREAM_LIFECYCLE)
    private readonly lifecycle?: Pick<EchoStreamLifecycle, 'report' | 'reports'>,
  ) {}

  /**
   * Retention figures of `stream` as of its last run (docs/operations.md "Retention and archive"):
   * entries this process trimmed, the group holding the trim back (`null` when none), the oldest
   * entry id left and the length. Every process refreshes them each `retentionIntervalMs`, the lock
   * holder or not.
   * @throws TypeError when the module option `retention` has no rule for `stream`.
   */
  retention(stream: string): RetentionReport {
    if (!this.lifecycle) throw new TypeError('ConsumerStats.retention(): no retention configured');
    return this.lifecycle.report(stream);
  }

  /** One snapshot per running handler loop (empty before start and after shutdown). */
  snapshot(): ConsumerSnapshot[] {
    return this.registry.list().map((consumer) => consumer.snapshot());
  }

  /** The snapshot of the loop consuming `stream` as `group`, if this app runs one. */
  get(stream: string, group: string): ConsumerSnapshot | undefined {
    return this.registry.find(stream, group)?.snapshot();
  }

  /**
   * The app's shared Redis connection (the producer's): `state` (`'down'` after a failed attempt
   * or a lost link, until it is back), `address`, and while down `error` (a line naming the cause:
   * refused, unknown host, timeout, auth, TLS ...) and `reason`. The loops' own connections show
   * theirs in `snapshot()[i].lastError` and `state: 'degraded'`.
   */
  connection(): RedisLinkStatus {
    return this.connections.sharedLinkStatus();
  }

  /**
   * The newer server verbs (CLAIM, IDMP, XACKDEL) the server of the app's shared connection
   * answers (every master of a Cluster), those this version uses where an option asks for them,
   * and the module option `serverFeatures` (docs/compatibility.md "Server features"). Asked once
   * per connection.
   */
  serverFeatures(): Promise<ServerFeatureReport> {
    return this.connections.client.serverFeatures();
  }

  /**
   * Live figures of a group from Redis (works for any group, not only this app's):
   * - `pending`, `lag`: XINFO GROUPS (`lag` is `null` on Redis < 7 or when the server cannot tell);
   * - `consumers`: XINFO CONSUMERS;
   * - `oldestPendingMs`: age of the oldest entry in the group's PEL (first row of
   *   `XPENDING stream group - + 1`) since the entry was ADDED to the stream, i.e. now minus the
   *   ms part of its entry id (not since its last delivery); `null` when nothing is pending;
   * - `deadLetters`: XLEN of the dead-letter stream (the loop's `deadLetterStream` when this app
   *   runs a loop for the group, else `<stream>:dlq`; 0 when it does not exist or is `false`).
   *
   * A partitioned stream (docs/partitions.md "Visible") is asked by its own name: its partitions'
   * figures summed, each partition's in `partitions` (with its lease), and `deadLetters` its
   * letters counted, split per partition.
   *
   * A group (or stream) that does not exist reads as `pending: 0, lag: null, consumers: [],
   * oldestPendingMs: null`.
   */
  async inspect(stream: string, group: string): Promise<GroupInspection> {
    const inspection = await this.readInspection(stream, group);
    this.inspections.set(groupKey(stream, group), inspection);
    return inspection;
  }

  /**
   * Every loop's counters in the Prometheus text exposition format 0.0.4, plus the group gauges
   * (`echo_stream_pending`, `_lag`, `_oldest_pending_seconds`, `_dead_letters`) as of the last
   * inspection. A call also refreshes those figures from Redis in the background (at most once a
   * second), so a scraper sees figures at most one scrape old; the very first scrape has none.
   */
  prometheus(): string {
    const { snapshots, inspections, retention } = this.metricFigures();
    return renderPrometheus(snapshots, inspections, retention);
  }

  /**
   * What `prometheus()` and the prom-client collectors of the `metrics` option render (one
   * source for both): every loop's snapshot plus the last inspection of each group, refreshed in
   * the background as `prometheus()` describes.
   * @internal not part of the API; use `prometheus()` or the `metrics` module option.
   */
  metricFigures(): MetricFigures {
    this.refreshGroupFigures();
    return {
      snapshots: this.snapshot(),
      inspections: this.inspections,
      retention: this.lifecycle?.reports() ?? [],
    };
  }

  private refreshGroupFigures(): void {
    const now = Date.now();
    if (this.refreshing || now - this.refreshedAt < GROUP_FIGURES_MAX_AGE_MS) return;
    this.refreshedAt = now;
    const loops = this.registry.list();
    this.refreshing = Promise.all(loops.map((loop) => this.inspect(loop.stream, loop.group)))
      .then(() => undefined)
      .catch((err: unknown) => this.logger.warn(`Group figures not refreshed: ${errorText(err)}`))
      .finally(() => (this.refreshing = null));
  }

  /**
   * The dead letters of `scope` in the dead-letter streams of its stream (and group), counted by
   * group and partition (the newest 10,000 of each at most; read again only when a dead-letter
   * stream changed).
   * @internal not part of the API: the dashboard's counts.
   */
  async deadLetterCounts(scope: DeadLetterScope, group?: string): Promise<DeadLetterCounts> {
    const client = this.connections.client;
    const sinks = this.registry.deadLetterStreamsOf(scope.stream, group);
    return sumCounts(
      await Promise.all(sinks.map((sink) => this.deadLetterCounter.count(client, sink, scope))),
    );
  }

  /**
   * XLEN of `deadLetterStream`; for a partition's stream (`orders:p:3`, no loop of its own), the
   * letters of that partition in its partitioned stream's dead-letter stream, counted.
   */
  private async deadLettersOf(stream: string, deadLetterStream: string): Promise<number> {
    const client = this.connections.client;
    const leases: PartitionLeases | undefined = client.partitions;
    const named = leases && partitionNameOf(stream);
    if (leases && named && deadLetterStream === deadLetterStreamOf(stream)) {
      const count = await storedCountOf(leases, named.stream);
      if (count !== null && named.index < count) {
        const scope = {
          asked: stream,
          stream: named.stream,
          partitions: count,
          partition: named.index,
        };
        return (await this.deadLetterCounts(scope)).total;
      }
    }
    return client.length(deadLetterStream);
  }

  private async readInspection(stream: string, group: string): Promise<GroupInspection> {
    const client = this.connections.client;
    const deadLetterStream =
      this.registry.find(stream, group)?.deadLetterStream ?? deadLetterStreamOf(stream);
    const [groups, deadLetters] = await Promise.all([
      client.groups(stream),
      deadLetterStream === false
        ? Promise.resolve(0)
        : this.deadLettersOf(stream, deadLetterStream),
    ]);
    const info = groups.find((g) => g.name === group);
    if (!info) {
      // no such group on a stream of that name: a partitioned stream has none of its name
      const leases: PartitionLeases | undefined = client.partitions;
      const count = leases && groups.length === 0 ? await storedCountOf(leases, stream) : null;
      if (leases && count !== null) {
        const letters =
          deadLetterStream === false
            ? null
            : await this.deadLetterCounts({ asked: stream, stream, partitions: count }, group);
        return inspectPartitioned(client, leases, stream, group, count, letters);
      }
      return { pending: 0, lag: null, consumers: [], oldestPendingMs: null, deadLetters };
    }
    const [consumers, oldest] = await Promise.all([
      client.consumers(stream, group),
      info.pending > 0
        ? client.pending(stream, group, { start: '-', end: '+', count: 1 })
        : Promise.resolve([]),
    ]);
    return {
      pending: info.pending,
      lag: info.lag,
      consumers: consumers.map(({ name, pending, idleMs }) => ({ name, pending, idleMs })),
      oldestPendingMs:
        oldest.length > 0 ? Math.max(0, Date.now() - entryIdMs(oldest[0].entryId)) : null,
      deadLetters,
    };
  }
}
