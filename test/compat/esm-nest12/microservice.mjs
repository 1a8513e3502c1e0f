/**
 * A plain ESM Nest 12 microservice using the packed (CommonJS) package's transport through
 * `import ... from 'nestjs-echo-stream/microservices'` (the subpath export, `import` condition:
 * Node's CJS named exports detection, and the package's own require('@nestjs/microservices')
 * reaching Nest 12's ESM build through require(esm)), its server from the package root (a
 * getter that loads the transport on first use, which the detection must still see). Decorators are applied by hand (no
 * compiler). An `EchoStreamServer` runs one `@EventPattern` and one `@MessagePattern` handler; an
 * `EchoStreamClient` (from `ClientsModule`, `customClass`) emits one event and sends one request.
 * Prints `ms-ready`, `ms-event <json>` (what the event handler saw), `ms-returned <json>` (what the
 * request handler returned), `ms-reply <json>` (what send() answered), closes the microservice
 * (and with it the client), prints `ms-closed` and exits on its own (no process.exit).
 */
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { EchoStreamServer } from 'nestjs-echo-stream';
import { EchoStreamClient, EchoStreamContext } from 'nestjs-echo-stream/microservices';

const EVENTS = 'compat-ms-events';
const QUOTES = 'compat-ms-quotes';
const CLIENT = 'COMPAT_CLIENT';

let markEvent;
const eventHandled = new Promise((resolve) => (markEvent = resolve));

/** What a handler saw of its entry, through the transport's context. */
function seen(payload, ctx) {
  return {
    payload,
    context: ctx instanceof EchoStreamContext,
    pattern: ctx.getPattern(),
    stream: ctx.getStream(),
    group: ctx.getGroup(),
    attempts: ctx.getAttempts(),
  };
}

class CompatController {
  onEvent(payload, ctx) {
    console.log(`ms-event ${JSON.stringify(seen(payload, ctx))}`);
    markEvent();
  }

  async quote(payload, ctx) {
    const returned = { price: payload.n * 10, seen: seen(payload, ctx) };
    console.log(`ms-returned ${JSON.stringify(returned)}`);
    return returned;
  }
}
for (const [method, decorator] of [
  ['onEvent', EventPattern(EVENTS)],
  ['quote', MessagePattern(QUOTES)],
]) {
  Payload()(CompatController.prototype, method, 0);
  Ctx()(CompatController.prototype, method, 1);
  decorator(
    CompatController.prototype,
    method,
    Object.getOwnPropertyDescriptor(CompatController.prototype, method),
  );
}
Controller()(CompatController);

class MicroserviceModule {}
Module({
  imports: [
    ClientsModule.register([
      {
        name: CLIENT,
        customClass: EchoStreamClient,
        options: { connection: process.env.REDIS_URL, timeoutMs: 15_000 },
      },
    ]),
  ],
  controllers: [CompatController],
})(MicroserviceModule);

const app = await NestFactory.createMicroservice(MicroserviceModule, {
  strategy: new EchoStreamServer({
    connection: process.env.REDIS_URL,
    group: 'compat-ms',
    consumerName: 'compat-ms',
    shutdownTimeoutMs: 2000,
    defaults: { blockMs: 1000 },
  }),
  logger: ['error', 'warn'],
});
await app.listen();
console.log('ms-ready');
const client = app.get(CLIENT);
if (!(client instanceof EchoStreamClient))
  throw new Error('ClientsModule built no EchoStreamClient');
await lastValueFrom(client.emit(EVENTS, { sku: 'A-1', qty: 2 }), { defaultValue: undefined });
await eventHandled;
const reply = await lastValueFrom(client.send(QUOTES, { n: 21 }));
console.log(`ms-reply ${JSON.stringify(reply)}`);
await app.close();
console.log('ms-closed');
