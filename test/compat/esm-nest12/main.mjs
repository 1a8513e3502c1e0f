/**
 * A plain ESM Nest 12 app using the packed (CommonJS) package through `import`: Node's CJS named
 * exports detection for the package, and the package's own require('@nestjs/common') reaching
 * Nest 12 through require(esm). Decorators are applied by hand (no compiler). Prints `ready`,
 * then `handled <json>` for the first message of `compat-stream`, closes the app and exits on its
 * own (no process.exit: an open handle left by app.close() would keep it alive).
 */
import 'reflect-metadata';
import { Injectable, Module, UseInterceptors } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConsumerStats, Ctx, EchoStreamModule, Payload, StreamHandler } from 'nestjs-echo-stream';

let markHandled;
const handled = new Promise((resolve) => (markHandled = resolve));

// The Nest pipeline (docs/delivery.md "Nest pipeline") without class-validator or @opentelemetry/api installed: an
// interceptor marks the call, @Payload() and @Ctx() inject the payload and the message.
let intercepted = false;
class MarkInterceptor {
  intercept(context, next) {
    intercepted = context.getType() === 'echo-stream';
    return next.handle();
  }
}
Injectable()(MarkInterceptor);

class CompatHandler {
  handle(payload, message) {
    const { id, entryId, stream, group, consumer, attempts } = message;
    console.log(
      `handled ${JSON.stringify({ id, entryId, stream, group, consumer, payload, attempts, intercepted })}`,
    );
    markHandled();
  }
}
Payload()(CompatHandler.prototype, 'handle', 0);
Ctx()(CompatHandler.prototype, 'handle', 1);
UseInterceptors(MarkInterceptor)(
  CompatHandler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(CompatHandler.prototype, 'handle'),
);
StreamHandler('compat-stream', 'compat', { blockMs: 1000 })(
  CompatHandler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(CompatHandler.prototype, 'handle'),
);
Injectable()(CompatHandler);

class AppModule {}
Module({
  imports: [
    EchoStreamModule.forRoot({ connection: process.env.REDIS_URL, consumerName: 'compat' }),
  ],
  providers: [CompatHandler],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
const loops = app
  .get(ConsumerStats)
  .snapshot()
  .map((s) => s.handler);
console.log(`ready ${JSON.stringify(loops)}`);
await handled;
// prometheus() works without prom-client installed: print the read counter of the loop
const text = app.get(ConsumerStats).prometheus();
const line = text.split('\n').find((l) => l.startsWith('echo_stream_read_total{'));
console.log(`prometheus ${JSON.stringify(line)}`);
await app.close();

// without prom-client, the `metrics` option fails bootstrap with a clear error: print it
const registry = { registerMetric() {}, getSingleMetric() {}, removeSingleMetric() {} };
class MetricsModule {}
Module({
  imports: [EchoStreamModule.forRoot({ connection: process.env.REDIS_URL, metrics: { registry } })],
})(MetricsModule);
try {
  const metricsApp = await NestFactory.createApplicationContext(MetricsModule, { logger: false });
  await metricsApp.close();
  console.log('metrics-option accepted');
} catch (err) {
  console.log(`metrics-option ${err.name}: ${err.message}`);
}
console.log('closed');
