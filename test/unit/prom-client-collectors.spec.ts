/**
 * The prom-client collectors of the `metrics` option render exactly what `prometheus()` renders
 * (same families, HELP, TYPE, labels and values, group gauges and one-hot state included), read
 * the figures at scrape time, and leave the registry as they found it at shutdown.
 */
import { jest } from '@jest/globals';
import { Counter, Registry } from 'prom-client';
import type { ConsumerStats } from '../../lib';
import type { ResolvedModuleOptions } from '../../lib/config/module-options';
import { EchoStreamConfigError } from '../../lib/errors/echo-stream-config.error';
import type { GroupInspection } from '../../lib/interfaces/consumer-snapshot.interface';
import { checkMetricsOptions } from '../../lib/config/metrics-options';
import { PromClientCollectors } from '../../lib/stats/prom-client-collectors';
import {
  METRICS,
  groupKey,
  renderPrometheus,
  type MetricFigures,
} from '../../lib/stats/prometheus';
import { snapshotFixture as snapshot } from '../support/snapshot-fixture';

const inspection: GroupInspection = {
  pending: 4,
  lag: 7,
  consumers: [],
  oldestPendingMs: 2500,
  deadLetters: 1,
};

/** A ConsumerStats whose figures the test sets; counts how often the collectors read them. */
function fakeStats(figures: { current: MetricFigures }) {
  const reads = { count: 0 };
  const stats = {
    metricFigures: () => {
      reads.count++;
      return figures.current;
    },
  } as unknown as ConsumerStats;
  return { stats, reads };
}

function collectors(stats: ConsumerStats, registry: Registry): PromClientCollectors {
  const options = { metrics: { registry } } as unknown as ResolvedModuleOptions;
  return new PromClientCollectors(stats, options);
}

/** The registry's text without the blank lines prom-client puts between families. */
async function scrape(registry: Registry): Promise<string> {
  return (await registry.metrics())
    .split('\n')
    .filter((l) => l !== '')
    .join('\n');
}

describe('PromClientCollectors', () => {
  it('scrapes the same text as renderPrometheus, group gauges and states included', async () => {
    const snapshots = [
      snapshot(),
      snapshot({ group: 'audit', handler: 'Audit.log', state: 'degraded', totalAcked: 0 }),
      snapshot({ stream: 'we"ird\\name\n', group: 'g', handler: 'Weird.m', tpsIn: 0 }),
    ];
    // one group inspected with every figure, one with unknown lag and nothing pending, one never
    const inspections = new Map([
      [groupKey('orders', 'billing'), inspection],
      [groupKey('orders', 'audit'), { ...inspection, lag: null, oldestPendingMs: null }],
    ]);
    const retention = [
      {
        stream: 'orders',
        trimmedTotal: 7,
        heldBackBy: null,
        oldestEntryId: '1-0',
        length: 3,
        lastRunAt: null,
      },
    ];
    const registry = new Registry();
    const { stats } = fakeStats({ current: { snapshots, inspections, retention } });
    const subject = collectors(stats, registry);
    await subject.onModuleInit();

    const expected = renderPrometheus(snapshots, inspections, retention).trimEnd();
    expect(expected).toContain('echo_stream_retention_trimmed_total{stream="orders"} 7');
    expect(await scrape(registry)).toBe(expected);
    expect(expected).toContain('echo_stream_lag{stream="orders",group="billing"');
    expect(expected).not.toContain('echo_stream_lag{stream="orders",group="audit"');
    expect(expected).toContain(
      'echo_stream_state{stream="orders",group="audit",consumer="host-1",handler="Audit.log",state="degraded"} 1',
    );
    subject.onApplicationShutdown();
  });

  it('registers one collector per metric definition, with its type', async () => {
    const registry = new Registry();
    const { stats } = fakeStats({
      current: { snapshots: [], inspections: new Map(), retention: [] },
    });
    const subject = collectors(stats, registry);
    await subject.onModuleInit();
    const json = await registry.getMetricsAsJSON();
    expect(json.map((m) => [m.name, m.type, m.help])).toEqual(
      METRICS.map((m) => [m.name, m.type, m.help]),
    );
    expect(json.every((m) => m.values.length === 0)).toBe(true);
    subject.onApplicationShutdown();
  });

  it('reads the figures at scrape time, once per scrape, and drops series of gone loops', async () => {
    const figures = { current: { snapshots: [snapshot()], inspections: new Map(), retention: [] } };
    const registry = new Registry();
    const { stats, reads } = fakeStats(figures);
    const subject = collectors(stats, registry);
    await subject.onModuleInit();
    expect(reads.count).toBe(0);

    expect(await scrape(registry)).toContain('echo_stream_acked_total{stream="orders"');
    expect(reads.count).toBe(1);

    figures.current = {
      snapshots: [snapshot({ group: 'audit', handler: 'Audit.log', totalAcked: 42 })],
      inspections: new Map(),
      retention: [],
    };
    const text = await scrape(registry);
    expect(reads.count).toBe(2);
    expect(text).toContain(
      'echo_stream_acked_total{stream="orders",group="audit",consumer="host-1",handler="Audit.log"} 42',
    );
    expect(text).not.toContain('group="billing"');
    subject.onApplicationShutdown();
  });

  it('reads fresh figures at every scrape under jest fake timers too', async () => {
    jest.useFakeTimers();
    try {
      const figures = {
        current: {
          snapshots: [snapshot({ totalAcked: 1 })],
          inspections: new Map(),
          retention: [],
        },
      };
      const registry = new Registry();
      const { stats } = fakeStats(figures);
      const subject = collectors(stats, registry);
      await subject.onModuleInit();
      expect(await scrape(registry)).toMatch(/^echo_stream_acked_total\{.*\} 1$/m);
      figures.current = {
        snapshots: [snapshot({ totalAcked: 2 })],
        inspections: new Map(),
        retention: [],
      };
      expect(await scrape(registry)).toMatch(/^echo_stream_acked_total\{.*\} 2$/m);
      subject.onApplicationShutdown();
    } finally {
      jest.useRealTimers();
    }
  });

  it("removes its metrics at shutdown and leaves the app's own alone", async () => {
    const registry = new Registry();
    const own = new Counter({ name: 'app_requests_total', help: 'app', registers: [registry] });
    own.inc(3);
    const { stats } = fakeStats({
      current: { snapshots: [snapshot()], inspections: new Map(), retention: [] },
    });
    const subject = collectors(stats, registry);
    await subject.onModuleInit();
    expect(registry.getSingleMetric('echo_stream_read_total')).toBeDefined();

    subject.onApplicationShutdown();
    for (const { name } of METRICS) expect(registry.getSingleMetric(name)).toBeUndefined();
    expect(await scrape(registry)).toBe(
      '# HELP app_requests_total app\n# TYPE app_requests_total counter\napp_requests_total 3',
    );

    // a second instance (the next app of the process) registers again without a collision
    const next = collectors(stats, registry);
    await next.onModuleInit();
    expect(await scrape(registry)).toContain('echo_stream_read_total{stream="orders"');
    next.onApplicationShutdown();
  });

  it('refuses a registry that already has one of its names, and registers none', async () => {
    const registry = new Registry();
    new Counter({ name: 'echo_stream_acked_total', help: 'taken', registers: [registry] });
    const { stats } = fakeStats({
      current: { snapshots: [], inspections: new Map(), retention: [] },
    });
    const subject = collectors(stats, registry);
    const error = await subject.onModuleInit().then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(EchoStreamConfigError);
    expect((error as Error).message).toMatch(
      /option 'metrics': the registry already has a metric named 'echo_stream_acked_total'/,
    );
    expect(registry.getMetricsAsArray()).toHaveLength(1);
    subject.onApplicationShutdown();
    expect(registry.getSingleMetric('echo_stream_acked_total')).toBeDefined();
  });
});

describe('the metrics option', () => {
  const where = 'EchoStreamModule';

  it('takes a prom-client Registry, the default one or a new one', () => {
    const options = { registry: new Registry() };
    expect(checkMetricsOptions(where, options)).toBe(options);
    expect(checkMetricsOptions(where, undefined)).toBeUndefined();
  });

  it.each([
    ['a string', 'yes', /option 'metrics' must be \{ registry \}.*got 'yes'/],
    ['an unknown key', { registry: new Registry(), prefix: 'x' }, /unknown option 'prefix'/],
    ['no registry', {}, /option 'metrics.registry' must be a prom-client Registry.*got undefined/],
    [
      'a registry without removeSingleMetric',
      { registry: { registerMetric() {}, getSingleMetric() {} } },
      /option 'metrics.registry' must be a prom-client Registry.*got an object/,
    ],
  ])('rejects %s, naming the option', (_what, value, message) => {
    expect(() => checkMetricsOptions(where, value as never)).toThrow(EchoStreamConfigError);
    expect(() => checkMetricsOptions(where, value as never)).toThrow(message);
  });
});
