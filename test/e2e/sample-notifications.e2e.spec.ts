/**
 * The sample's notifications microservice (sample/notifications/) against a throw-away
 * redis-server: the sample app with EchoStreamServer connected as main.ts does; orders posted over
 * HTTP are charged by billing, which emits one event per order; `GET /notifications` answers
 * through `send()` what the microservice sent; the microservice's loops show in the app's
 * ConsumerStats (a hybrid app); an event emitted twice under one id is notified once (`dedup`).
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { lastValueFrom } from 'rxjs';
import { ConsumerStats } from '../../lib';
import { EchoStreamRecordBuilder } from '../../lib/microservices';
import { AppModule } from '../../sample/app.module';
import { SampleConfig } from '../../sample/config';
import {
  connectNotifications,
  NOTIFICATIONS_GROUP,
  NOTIFIER,
  ORDER_CHARGED,
  type SentNotifications,
} from '../../sample/notifications';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let app: INestApplication;
let base: string;

beforeAll(async () => {
  server = await RedisServer.start();
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(SampleConfig)
    .useValue(new SampleConfig({ redisUrl: server.url, failureRate: 0, consumerName: 'n1' }))
    .overrideProvider(Registry)
    .useValue(new Registry())
    .compile();
  app = moduleRef.createNestApplication({ logger: ['error'] });
  await connectNotifications(app);
  await app.listen(0, '127.0.0.1');
  base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

async function notifications(): Promise<SentNotifications> {
  const res = await fetch(`${base}/notifications`);
  expect(res.status).toBe(200);
  return (await res.json()) as SentNotifications;
}

it('notifies each charged order once, answers GET /notifications over send(), shows its loops in the app stats', async () => {
  for (const id of ['co-1', 'co-2', 'co-3']) {
    const res = await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id, sku: 'A-1', qty: 2 }),
    });
    expect(res.status).toBe(202);
  }
  const sent = (await waitFor(
    async () => {
      const answer = await notifications();
      return answer.count === 3 && answer;
    },
    { message: 'three notifications' },
  )) as SentNotifications;
  expect(sent.newest.map((n) => n.orderId).sort()).toEqual(['co-1', 'co-2', 'co-3']);
  expect(sent.newest.every((n) => n.sku === 'A-1' && n.qty === 2 && n.attempts === 1)).toBe(true);
  const loops = app
    .get(ConsumerStats)
    .snapshot()
    .map((s) => `${s.stream}/${s.group}`);
  expect(loops).toEqual(
    expect.arrayContaining([`${ORDER_CHARGED}/${NOTIFICATIONS_GROUP}`, 'orders/billing']),
  );

  // the same order's event again (a charge retried after its emit): skipped by `dedup`
  const notifier = app.get<ClientProxy>(NOTIFIER);
  const again = new EchoStreamRecordBuilder({ orderId: 'co-1', sku: 'A-1', qty: 2 }).setId('co-1');
  await lastValueFrom(notifier.emit(ORDER_CHARGED, again.build()), { defaultValue: undefined });
  await waitFor(
    () => app.get(ConsumerStats).get(ORDER_CHARGED, NOTIFICATIONS_GROUP)?.totalDuplicates === 1,
    { message: 'the repeat skipped as a duplicate' },
  );
  expect((await notifications()).count).toBe(3);
});
