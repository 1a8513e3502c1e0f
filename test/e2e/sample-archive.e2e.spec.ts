/**
 * The sample's orders archive (issue 14): retention hands trimmed orders to
 * `OrdersArchiveHandler`, which appends them to its JSON-lines file before they leave Redis.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { Injectable } from '@nestjs/common';
import { SampleConfig } from '../../sample/config';
import { ORDERS_STREAM, OrdersArchiveHandler } from '../../sample/orders';
import { bootApp, closeApps, fill } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let dir: string;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-archive-'));
});
afterAll(async () => {
  await closeApps();
  await stopAllRedisServers();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('archives every trimmed order to the JSON-lines file, oldest first, before the trim', async () => {
  const archiveFile = path.join(dir, 'orders-archive.jsonl');
  @Injectable()
  class Config extends SampleConfig {
    constructor() {
      super({ archiveFile });
    }
  }
  const ids = await fill(redis, ORDERS_STREAM, 25);
  await bootApp({ connection: server.url, retention: [{ stream: ORDERS_STREAM, maxLen: 5 }] }, [
    OrdersArchiveHandler,
    { provide: SampleConfig, useClass: Config } as never,
  ]);
  await waitFor(async () => (await redis.xlen(ORDERS_STREAM)) === 5, { message: 'trimmed to 5' });
  const lines = fs.readFileSync(archiveFile, 'utf8').trimEnd().split('\n');
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records.map((r) => r.entryId)).toEqual(ids.slice(0, 20));
  expect(records[0]).toEqual({
    entryId: ids[0],
    id: 'b0',
    at: new Date(Number(ids[0].split('-')[0])).toISOString(),
    fields: { id: 'b0', data: '{"i":0}' },
  });
});
