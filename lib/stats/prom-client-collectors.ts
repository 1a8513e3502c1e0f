import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Counter, Gauge, Registry } from 'prom-client';
import { ECHO_STREAM_OPTIONS } from '../config/constants';
import { messages } from '../config/messages';
import type { ResolvedModuleOptions } from '../config/module-options';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import { ConsumerStats } from './consumer-stats.service';
import {
  METRICS,
  type MetricDefinition,
  type MetricFigures,
  type MetricSample,
} from './prometheus';

type PromClient = typeof import('prom-client');

/** The peer range of package.json, for the "not installed" error. */
const PROM_CLIENT_RANGE = '^15';

/**
 * The `metrics: { registry }` option (internal): at module init, registers every family of
 * {@link METRICS} as a prom-client collector of the app's registry (prom-client is loaded only
 * here, only when the option is set); at shutdown, removes them again, so apps created and closed
 * one after another in one process never collide in a shared registry.
 *
 * Values are read at scrape time from `ConsumerStats.metricFigures()`, the source
 * `ConsumerStats.prometheus()` renders: no timers here, and no I/O beyond the throttled
 * background refresh of the group gauges that `prometheus()` does too.
 */
@Injectable()
export class PromClientCollectors implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(PromClientCollectors.name);
  private registered: Array<{ name: string; metric: Counter | Gauge }> = [];
  /** The figures of the scrape in progress (one read for all families of one scrape). */
  private frame: MetricFigures | undefined;

  constructor(
    private readonly stats: ConsumerStats,
    @Inject(ECHO_STREAM_OPTIONS) private readonly options: ResolvedModuleOptions,
  ) {}

  /**
   * Module init rather than bootstrap: a missing peer or a taken name fails `app.init()` before
   * any loop has started, so nothing is left running behind the error.
   */
  async onModuleInit(): Promise<void> {
    if (!this.options.metrics || this.registered.length > 0) return;
    // The option is typed structurally (no prom-client in our typings); it was checked to have
    // the Registry methods in resolveOptions().
    const registry = this.options.metrics.registry as unknown as Registry;
    const promClient = await loadPromClient();
    const taken = METRICS.find((metric) => registry.getSingleMetric(metric.name) !== undefined);
    if (taken) throw new EchoStreamConfigError(messages.metricTaken(taken.name));
    for (const definition of METRICS) {
      const metric = this.collector(promClient, definition);
      registry.registerMetric(metric);
      this.registered.push({ name: definition.name, metric });
    }
    this.logger.log(`Registered ${METRICS.length} metrics in the prom-client registry`);
  }

  onApplicationShutdown(): void {
    const registry = this.options.metrics?.registry;
    if (!registry) return;
    for (const { name, metric } of this.registered) {
      // only our own: a metric the app registered under that name since is not ours to remove
      if (registry.getSingleMetric(name) === metric) registry.removeSingleMetric(name);
    }
    this.registered = [];
  }

  /**
   * A collector that, at each scrape, replaces its series with the definition's samples (the
   * reset drops the series of loops gone since the last scrape). A counter is filled with
   * `inc` from zero, as prom-client counters cannot be set.
   */
  private collector(promClient: PromClient, definition: MetricDefinition): Counter | Gauge {
    const config = {
      name: definition.name,
      help: definition.help,
      labelNames: definition.labelNames,
      registers: [],
    };
    const figures = () => this.figures();
    // prom-client calls `collect` with the metric as `this`
    const refill = <M extends Counter | Gauge>(put: (metric: M, sample: MetricSample) => void) =>
      function (this: M): void {
        this.reset();
        for (const sample of definition.samples(figures())) put(this, sample);
      };
    if (definition.type === 'counter') {
      return new promClient.Counter({
        ...config,
        collect: refill<Counter>((counter, { labels, value }) => counter.inc(labels, value)),
      });
    }
    return new promClient.Gauge({
      ...config,
      collect: refill<Gauge>((gauge, { labels, value }) => gauge.set(labels, value)),
    });
  }

  /**
   * prom-client calls every collector of one scrape synchronously, one after the other: they
   * share one read of the figures (consistent families), forgotten once the scrape yields.
   */
  private figures(): MetricFigures {
    if (!this.frame) {
      this.frame = this.stats.metricFigures();
      // a promise job, not queueMicrotask: jest's fake timers fake the latter, and a test of the
      // app with fake timers would then scrape the first figures forever
      void Promise.resolve().then(() => (this.frame = undefined));
    }
    return this.frame;
  }
}

/** `import('prom-client')`, with a clear error when the optional peer is not installed. */
async function loadPromClient(): Promise<PromClient> {
  try {
    const loaded = (await import('prom-client')) as PromClient & { default?: PromClient };
    // CommonJS from native ESM may put the exports under `default` only
    return typeof loaded.Counter === 'function' ? loaded : (loaded.default ?? loaded);
  } catch (err) {
    if (isMissingModule(err, 'prom-client')) {
      throw new EchoStreamConfigError(
        messages.missingPeer('metrics', 'prom-client', PROM_CLIENT_RANGE),
      );
    }
    throw err;
  }
}

function isMissingModule(err: unknown, name: string): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') &&
    typeof message === 'string' &&
    message.includes(`'${name}'`)
  );
}
