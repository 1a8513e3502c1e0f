import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * Node's default metrics (process CPU and memory, heap, event loop lag, GC) in the app's
 * prom-client registry, beside the ones EchoStreamModule registers there (its `metrics` option).
 * Removed again at shutdown, as the module removes its own, so an app created after this one in
 * the same process (tests) starts from a clean registry.
 */
@Injectable()
export class NodeMetrics implements OnModuleInit, OnApplicationShutdown {
  private names: string[] = [];

  constructor(private readonly registry: Registry) {}

  onModuleInit(): void {
    const before = new Set(this.registry.getMetricsAsArray().map((m) => m.name));
    collectDefaultMetrics({ register: this.registry });
    this.names = this.registry
      .getMetricsAsArray()
      .map((m) => m.name)
      .filter((name) => !before.has(name));
  }

  onApplicationShutdown(): void {
    for (const name of this.names) this.registry.removeSingleMetric(name);
    this.names = [];
  }
}
