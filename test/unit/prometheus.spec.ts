/** Prometheus text exposition 0.0.4 of the loop counters: every family, labels, escaping. */
import {
  PROMETHEUS_CONTENT_TYPE,
  escapeLabelValue,
  renderPrometheus,
} from '../../lib/stats/prometheus';
import { snapshotFixture as snapshot } from '../support/snapshot-fixture';

const LABELS = 'stream="orders",group="billing",consumer="host-1",handler="Billing.charge"';

const FAMILIES: Array<[string, 'counter' | 'gauge']> = [
  ['echo_stream_read_total', 'counter'],
  ['echo_stream_acked_total', 'counter'],
  ['echo_stream_dead_lettered_total', 'counter'],
  ['echo_stream_handler_errors_total', 'counter'],
  ['echo_stream_deleted_total', 'counter'],
  ['echo_stream_fenced_total', 'counter'],
  ['echo_stream_skipped_total', 'counter'],
  ['echo_stream_retrying', 'gauge'],
  ['echo_stream_retries_total', 'counter'],
  ['echo_stream_tps_in', 'gauge'],
  ['echo_stream_tps_out', 'gauge'],
  ['echo_stream_up', 'gauge'],
  ['echo_stream_state', 'gauge'],
];

describe('renderPrometheus', () => {
  it('has a HELP and a TYPE line for every family, even with no loops', () => {
    const text = renderPrometheus([]);
    for (const [name, type] of FAMILIES) {
      expect(text).toMatch(new RegExp(`^# HELP ${name} \\S.*$`, 'm'));
      expect(text.split('\n').filter((l) => l.startsWith(`# TYPE ${name} `))).toEqual([
        `# TYPE ${name} ${type}`,
      ]);
    }
    expect(text.split('\n').filter((l) => l && !l.startsWith('#'))).toEqual([]);
    expect(text.endsWith('\n')).toBe(true);
  });

  it('writes one sample per loop for every metric', () => {
    const text = renderPrometheus([snapshot()]);
    const lines = text.split('\n');
    expect(lines).toContain(`echo_stream_read_total{${LABELS}} 10`);
    expect(lines).toContain(`echo_stream_acked_total{${LABELS}} 8`);
    expect(lines).toContain(`echo_stream_dead_lettered_total{${LABELS}} 1`);
    expect(lines).toContain(`echo_stream_handler_errors_total{${LABELS}} 3`);
    expect(lines).toContain(`echo_stream_deleted_total{${LABELS}} 2`);
    expect(lines).toContain(`echo_stream_fenced_total{${LABELS}} 9`);
    expect(lines).toContain(`echo_stream_skipped_total{${LABELS},reason="duplicate"} 5`);
    expect(lines).toContain(`echo_stream_skipped_total{${LABELS},reason="stale"} 6`);
    expect(lines).toContain(`echo_stream_retrying{${LABELS}} 4`);
    expect(lines).toContain(`echo_stream_retries_total{${LABELS}} 7`);
    expect(lines).toContain(`echo_stream_tps_in{${LABELS}} 1.5`);
    expect(lines).toContain(`echo_stream_tps_out{${LABELS}} 0.8`);
    expect(lines).toContain(`echo_stream_up{${LABELS}} 1`);
  });

  it('one-hot encodes the state', () => {
    const text = renderPrometheus([snapshot({ state: 'degraded' })]);
    const states = text.split('\n').filter((l) => l.startsWith('echo_stream_state{'));
    expect(states).toEqual([
      `echo_stream_state{${LABELS},state="starting"} 0`,
      `echo_stream_state{${LABELS},state="running"} 0`,
      `echo_stream_state{${LABELS},state="paused"} 0`,
      `echo_stream_state{${LABELS},state="degraded"} 1`,
      `echo_stream_state{${LABELS},state="stopping"} 0`,
      `echo_stream_state{${LABELS},state="stopped"} 0`,
    ]);
    expect(text.split('\n')).toContain(`echo_stream_up{${LABELS}} 0`);
  });

  it('keeps each family contiguous, samples after its TYPE line', () => {
    const text = renderPrometheus([snapshot(), snapshot({ group: 'audit', handler: 'Audit.log' })]);
    let current = '';
    for (const line of text.trimEnd().split('\n')) {
      const type = /^# TYPE (\S+) /.exec(line);
      if (type) current = type[1];
      else if (!line.startsWith('#')) expect(line.startsWith(`${current}{`)).toBe(true);
    }
    expect(text.split('\n').filter((l) => l.startsWith('echo_stream_read_total{'))).toHaveLength(2);
  });

  it('escapes backslash, double quote and newline in label values', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const text = renderPrometheus([
      snapshot({ stream: 'we"ird\\stream\nname', group: 'g"', consumer: 'c\\', handler: 'H.m\n' }),
    ]);
    const line = text.split('\n').find((l) => l.startsWith('echo_stream_read_total{'));
    expect(line).toBe(
      'echo_stream_read_total{stream="we\\"ird\\\\stream\\nname",group="g\\"",consumer="c\\\\",handler="H.m\\n"} 10',
    );
    // every line is one line: no raw newline leaked from a label value
    for (const l of text.trimEnd().split('\n')) {
      expect(l).toMatch(/^(# (HELP|TYPE) \S+ .+|[a-z_]+\{.*\} \S+)$/);
    }
  });

  it('formats odd numbers as Prometheus expects', () => {
    const text = renderPrometheus([snapshot({ tpsIn: Number.NaN, tpsOut: Infinity })]);
    expect(text).toContain(`echo_stream_tps_in{${LABELS}} NaN\n`);
    expect(text).toContain(`echo_stream_tps_out{${LABELS}} +Inf\n`);
  });

  it('names the 0.0.4 content type', () => {
    expect(PROMETHEUS_CONTENT_TYPE).toBe('text/plain; version=0.0.4; charset=utf-8');
  });
});
