/**
 * Apps of the e2e specs of partitioned reads (test/e2e/partitions-reads*.e2e.spec.ts): handlers
 * built from plain specs (one provider, one `@StreamHandler` method each, group 'g'), booted as a
 * named consumer and awaited until every loop runs and owns its share of partitions.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication, type Type } from '@nestjs/common';
import {
  ConsumerStats,
  StreamHandler,
  type EchoStreamModuleOptions,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../../lib';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { waitFor } from './wait-for';

/** A handler method: its stream, its options, what it does. */
export interface HandlerSpec {
  stream: string;
  options: Partial<StreamHandlerOptions>;
  handle?: (m: StreamMessage<{ seq: number }>) => unknown;
}

/** One provider with a `@StreamHandler` method per spec (group 'g'). */
export function handlersOf(specs: readonly HandlerSpec[]): Type<unknown> {
  class Handlers {}
  specs.forEach((spec, i) => {
    const key = `h${i}`;
    Object.defineProperty(Handlers.prototype, key, {
      value: (m: StreamMessage<{ seq: number }>) => spec.handle?.(m),
      writable: true,
      configurable: true,
    });
    const descriptor = Object.getOwnPropertyDescriptor(Handlers.prototype, key)!;
    StreamHandler(spec.stream, 'g', spec.options)(Handlers.prototype, key, descriptor);
  });
  Injectable()(Handlers);
  return Handlers;
}

/** The apps of one spec file on one server; `closeAll()` after each test. */
export class PartitionApps {
  private readonly apps: INestApplication[] = [];

  /** @param url the server's URL (read when an app starts). */
  constructor(private readonly url: () => string) {}

  /**
   * Boots an app of `specs` as consumer `name`; resolves once every loop runs and, for a
   * partitioned handler, `owns(stream, owned)` holds.
   */
  async start(
    name: string,
    specs: readonly HandlerSpec[],
    options: EchoStreamModuleOptions = {},
    owns: (stream: string, owned: number) => boolean = () => true,
  ): Promise<INestApplication> {
    const handlers = handlersOf(specs);
    @Module({ providers: [handlers] })
    class HandlerModule {}
    const app = await createEchoStreamApp(
      { connection: this.url(), consumerName: name, shutdownTimeoutMs: 3000, ...options },
      HandlerModule,
      new CaptureLogger(),
    );
    this.apps.push(app);
    await app.init();
    const stats = app.get(ConsumerStats);
    await waitFor(
      () =>
        specs.every((spec) => {
          const s = stats.get(spec.stream, 'g');
          if (s?.state !== 'running') return false;
          return !spec.options.partitions || owns(spec.stream, s.partitions?.length ?? 0);
        }),
      { timeoutMs: 20_000, message: `${name}: every loop running, partitions owned` },
    );
    return app;
  }

  async close(app: INestApplication): Promise<void> {
    this.apps.splice(this.apps.indexOf(app), 1);
    await app.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.apps.splice(0).map((app) => app.close()));
  }
}
