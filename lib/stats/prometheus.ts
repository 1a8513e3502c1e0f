import type {
  ConsumerSnapshot,
  ConsumerState,
  GroupInspection,
} from '../interfaces/consumer-snapshot.interface';
import type { RetentionReport } from '../interfaces/lifecycle.interface';

/** The `Content-Type` of the text exposition format 0.0.4, for an HTTP `/metrics` response. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** One metric family of one sample per loop. */
interface MetricFamily {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  value(snapshot: ConsumerSnapshot): number;
}

const FAMILIES: readonly MetricFamily[] = [
  {
    name: 'echo_stream_read_total',
    type: 'counter',
    help: 'Entries read by the loop (new, reclaimed and drained from its own pending list).',
    value: (s) => s.totalRead,
  },
  {
    name: 'echo_stream_acked_total',
    type: 'counter',
    help: 'Entries acknowledged after their handler succeeded.',
    value: (s) => s.totalAcked,
  },
  {
    name: 'echo_stream_dead_lettered_total',
    type: 'counter',
    help: 'Entries dead-lettered (decode errors and poison pills).',
    value: (s) => s.totalDlq,
  },
  {
    name: 'echo_stream_handler_errors_total',
    type: 'counter',
    help: 'Handler failures (the entry stays pending and is re-delivered).',
    value: (s) => s.totalErrors,
  },
  {
    name: 'echo_stream_deleted_total',
    type: 'counter',
    help: 'Pending entries found deleted from the stream (acked, never handled).',
    value: (s) => s.totalDeleted,
  },
  {
    name: 'echo_stream_fenced_total',
    type: 'counter',
    help:
      'exactlyOnce entries whose commit was refused, nothing written: the entry had become ' +
      "another consumer's, or was delivered again, while its handler ran.",
    value: (s) => s.totalFenced,
  },
  {
    name: 'echo_stream_retrying',
    type: 'gauge',
    help: 'Failed entries waiting for their retry in this process now.',
    value: (s) => s.retrying,
  },
  {
    name: 'echo_stream_retries_total',
    type: 'counter',
    help: 'Retries scheduled after handler failures.',
    value: (s) => s.totalRetries,
  },
  {
    name: 'echo_stream_tps_in',
    type: 'gauge',
    help: 'Entries read per second over the last 10 seconds.',
    value: (s) => s.tpsIn,
  },
  {
    name: 'echo_stream_tps_out',
    type: 'gauge',
    help: 'Entries acknowledged per second over the last 10 seconds.',
    value: (s) => s.tpsOut,
  },
  {
    name: 'echo_stream_up',
    type: 'gauge',
    help: '1 when the loop is running, 0 otherwise.',
    value: (s) => (s.state === 'running' ? 1 : 0),
  },
];

/** Group figures from Redis (`ConsumerStats.inspect`); a sample only where the figure is known. */
interface GroupFamily {
  name: string;
  help: string;
  value(inspection: GroupInspection): number | null;
}

const GROUP_FAMILIES: readonly GroupFamily[] = [
  {
    name: 'echo_stream_pending',
    help: "Entries in the group's pending list (as of the last inspection).",
    value: (i) => i.pending,
  },
  {
    name: 'echo_stream_lag',
    help: 'Entries not yet delivered to the group (as of the last inspection).',
    value: (i) => i.lag,
  },
  {
    name: 'echo_stream_oldest_pending_seconds',
    help: 'Age of the oldest pending entry since it was added (as of the last inspection).',
    value: (i) => (i.oldestPendingMs === null ? null : i.oldestPendingMs / 1000),
  },
  {
    name: 'echo_stream_dead_letters',
    help: 'Length of the dead-letter stream (as of the last inspection).',
    value: (i) => i.deadLetters,
  },
];

/**
 * Per-stream figures of retention (docs/operations.md "Retention and archive"), one sample per
 * stream with a retention rule.
 */
const RETENTION_FAMILIES: ReadonlyArray<{
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  value(report: RetentionReport): number;
}> = [
  {
    name: 'echo_stream_retention_trimmed_total',
    type: 'counter',
    help: 'Entries trimmed by retention in this process.',
    value: (r) => r.trimmedTotal,
  },
  {
    name: 'echo_stream_length',
    type: 'gauge',
    help: 'Length of the stream (as of the last retention run).',
    value: (r) => r.length,
  },
];

/** The key of a group in the `inspections` map of {@link renderPrometheus}. */
export function groupKey(stream: string, group: string): string {
  return `${stream}\u0000${group}`;
}

const STATE_FAMILY = {
  name: 'echo_stream_state',
  help: 'Lifecycle state of the loop: 1 for its current state, 0 for the others.',
};

/** Every state, in lifecycle order (a record, so the compiler checks the list is complete). */
const STATES = Object.keys({
  starting: true,
  running: true,
  paused: true,
  degraded: true,
  stopping: true,
  stopped: true,
} satisfies Record<ConsumerState, true>) as ConsumerState[];

/** What the metrics are read from: the loops' snapshots and the last inspection of each group. */
export interface MetricFigures {
  readonly snapshots: readonly ConsumerSnapshot[];
  /** Keyed by {@link groupKey}. */
  readonly inspections: ReadonlyMap<string, GroupInspection>;
  /** One report per stream with a retention rule. */
  readonly retention: readonly RetentionReport[];
}

/** One series of a metric: its labels (in `labelNames` order) and its value. */
export interface MetricSample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * One metric family as every renderer sees it: the text of `ConsumerStats.prometheus()` and the
 * prom-client collectors of the `metrics` option both walk {@link METRICS}, so a row added to
 * `FAMILIES`, `GROUP_FAMILIES` or `RETENTION_FAMILIES` above shows up in both.
 */
export interface MetricDefinition {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly labelNames: readonly string[];
  samples(figures: MetricFigures): MetricSample[];
}

/** The labels of every series: which loop it belongs to. */
const LOOP_LABEL_NAMES = ['stream', 'group', 'consumer', 'handler'] as const;

function loopLabels(s: ConsumerSnapshot): Record<string, string> {
  return { stream: s.stream, group: s.group, consumer: s.consumer, handler: s.handler };
}

/**
 * Every metric family, in exposition order: per-loop counters and gauges, the group gauges
 * (a sample only where the loop's group has been inspected and the figure is known), then the
 * one-hot `echo_stream_state`.
 */
export const METRICS: readonly MetricDefinition[] = [
  ...FAMILIES.map((family): MetricDefinition => ({
    name: family.name,
    type: family.type,
    help: family.help,
    labelNames: LOOP_LABEL_NAMES,
    samples: ({ snapshots }) =>
      snapshots.map((s) => ({ labels: loopLabels(s), value: family.value(s) })),
  })),
  {
    name: 'echo_stream_skipped_total',
    type: 'counter',
    help:
      'Entries acked without a handler call: reason="duplicate" (dedup: the branded id was ' +
      'acked already), reason="stale" (newerWins: not newer than the newest of its key).',
    labelNames: [...LOOP_LABEL_NAMES, 'reason'],
    samples: ({ snapshots }) =>
      snapshots.flatMap((s) => [
        { labels: { ...loopLabels(s), reason: 'duplicate' }, value: s.totalDuplicates },
        { labels: { ...loopLabels(s), reason: 'stale' }, value: s.totalStale },
      ]),
  },
  ...GROUP_FAMILIES.map((family): MetricDefinition => ({
    name: family.name,
    type: 'gauge',
    help: family.help,
    labelNames: LOOP_LABEL_NAMES,
    samples: ({ snapshots, inspections }) =>
      snapshots.flatMap((s) => {
        const inspection = inspections.get(groupKey(s.stream, s.group));
        const value = inspection ? family.value(inspection) : null;
        return value === null ? [] : [{ labels: loopLabels(s), value }];
      }),
  })),
  {
    name: 'echo_stream_partition_lag',
    type: 'gauge',
    help:
      'A partitioned stream: one series per partition this process owns (label partition), ' +
      'entries of the partition not yet delivered to the group (-1 where the server cannot tell).',
    labelNames: [...LOOP_LABEL_NAMES, 'partition'],
    samples: ({ snapshots }) =>
      snapshots.flatMap((s) =>
        (s.partitions ?? []).map((p) => ({
          labels: { ...loopLabels(s), partition: String(p.partition) },
          value: p.lag ?? -1,
        })),
      ),
  },
  ...RETENTION_FAMILIES.map((family): MetricDefinition => ({
    name: family.name,
    type: family.type,
    help: family.help,
    labelNames: ['stream'],
    samples: ({ retention }) =>
      retention.map((r) => ({ labels: { stream: r.stream }, value: family.value(r) })),
  })),
  {
    name: STATE_FAMILY.name,
    type: 'gauge',
    help: STATE_FAMILY.help,
    labelNames: [...LOOP_LABEL_NAMES, 'state'],
    samples: ({ snapshots }) =>
      snapshots.flatMap((s) =>
        STATES.map((state) => ({
          labels: { ...loopLabels(s), state },
          value: s.state === state ? 1 : 0,
        })),
      ),
  },
];

/**
 * Renders {@link METRICS} in the Prometheus text exposition format 0.0.4: per family one
 * `# HELP` and one `# TYPE` line, then one sample per loop labelled `stream`, `group`, `consumer`
 * and `handler` (`echo_stream_state` adds `state`, one-hot). Families are emitted even with no
 * loops. Group gauges (pending, lag, oldest pending, dead letters) come from `inspections` (keyed
 * by {@link groupKey}) where a loop's group has one. Pure: no clock, no I/O.
 */
export function renderPrometheus(
  snapshots: readonly ConsumerSnapshot[],
  inspections: ReadonlyMap<string, GroupInspection> = new Map(),
  retention: readonly RetentionReport[] = [],
): string {
  const figures: MetricFigures = { snapshots, inspections, retention };
  const lines: string[] = [];
  for (const metric of METRICS) {
    lines.push(
      `# HELP ${metric.name} ${escapeHelp(metric.help)}`,
      `# TYPE ${metric.name} ${metric.type}`,
    );
    for (const { labels, value } of metric.samples(figures)) {
      lines.push(`${metric.name}{${labelPairs(labels)}} ${formatValue(value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Escapes a label value: backslash, double quote and line feed (format 0.0.4). */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelPairs(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([name, value]) => `${name}="${escapeLabelValue(value)}"`)
    .join(',');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
