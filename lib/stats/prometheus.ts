import type {
  ConsumerSnapshot,
  ConsumerState,
  GroupInspection,
} from '../interfaces/consumer-snapshot.interface';

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
  degraded: true,
  stopping: true,
  stopped: true,
} satisfies Record<ConsumerState, true>) as ConsumerState[];

/**
 * Renders loop snapshots in the Prometheus text exposition format 0.0.4: per family one `# HELP`
 * and one `# TYPE` line, then one sample per loop labelled `stream`, `group`, `consumer` and
 * `handler` (`echo_stream_state` adds `state`, one-hot). Families are emitted even with no loops.
 * Group gauges (pending, lag, oldest pending, dead letters) come from `inspections` (keyed by
 * {@link groupKey}) where a loop's group has one. Pure: no clock, no I/O.
 */
export function renderPrometheus(
  snapshots: readonly ConsumerSnapshot[],
  inspections: ReadonlyMap<string, GroupInspection> = new Map(),
): string {
  const lines: string[] = [];
  const labels = snapshots.map(labelPairs);
  for (const family of FAMILIES) {
    lines.push(
      `# HELP ${family.name} ${escapeHelp(family.help)}`,
      `# TYPE ${family.name} ${family.type}`,
    );
    snapshots.forEach((snapshot, i) => {
      lines.push(`${family.name}{${labels[i]}} ${formatValue(family.value(snapshot))}`);
    });
  }
  for (const family of GROUP_FAMILIES) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} gauge`);
    snapshots.forEach((snapshot, i) => {
      const inspection = inspections.get(groupKey(snapshot.stream, snapshot.group));
      const value = inspection ? family.value(inspection) : null;
      if (value !== null) lines.push(`${family.name}{${labels[i]}} ${formatValue(value)}`);
    });
  }
  lines.push(
    `# HELP ${STATE_FAMILY.name} ${escapeHelp(STATE_FAMILY.help)}`,
    `# TYPE ${STATE_FAMILY.name} gauge`,
  );
  snapshots.forEach((snapshot, i) => {
    for (const state of STATES) {
      const value = snapshot.state === state ? 1 : 0;
      lines.push(`${STATE_FAMILY.name}{${labels[i]},state="${state}"} ${value}`);
    }
  });
  return `${lines.join('\n')}\n`;
}

/** Escapes a label value: backslash, double quote and line feed (format 0.0.4). */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelPairs(snapshot: ConsumerSnapshot): string {
  return (
    `stream="${escapeLabelValue(snapshot.stream)}",group="${escapeLabelValue(snapshot.group)}",` +
    `consumer="${escapeLabelValue(snapshot.consumer)}",handler="${escapeLabelValue(snapshot.handler)}"`
  );
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}
