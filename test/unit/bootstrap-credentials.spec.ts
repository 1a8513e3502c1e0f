/**
 * The app's own bootstrap errors never carry a credential: a connection URL that cannot be used
 * fails bootstrap with an EchoStreamConfigError showing `<invalid URL>` (or `redis://***@host`),
 * and nothing reachable from the thrown error (message, stack, cause chain, fields such as the
 * `input` of the TypeError `new URL()` throws, util.inspect, JSON) holds the password. Nothing
 * connects: no Redis needed.
 */
import 'reflect-metadata';
import { inspect } from 'node:util';
import { Injectable, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  EchoStreamConfigError,
  EchoStreamModule,
  StreamHandler,
  type EchoStreamModuleOptions,
} from '../../lib';
import { createConnection } from '../../lib/redis/connection/redis-connection.factory';

@Injectable()
class OneHandler {
  @StreamHandler('bootstrap-credentials', 'g')
  handle(): void {}
}

/** Every log line of the app, to check them too. */
class KeepLines implements LoggerService {
  readonly lines: string[] = [];
  log = (...args: unknown[]) => this.lines.push(inspect(args, { depth: Infinity }));
  error = this.log;
  warn = this.log;
  debug = this.log;
  verbose = this.log;
}

/** Boots an app of one handler (compile, then init) and returns what it threw. */
async function bootstrapError(
  options: EchoStreamModuleOptions | string,
  logger: KeepLines,
): Promise<unknown> {
  try {
    const moduleRef = await Test.createTestingModule({
      imports: [
        EchoStreamModule.forRoot(typeof options === 'string' ? { connection: options } : options),
      ],
      providers: [OneHandler],
    }).compile();
    const app = moduleRef.createNestApplication({ logger });
    try {
      await app.init();
    } finally {
      await app.close();
    }
  } catch (err) {
    return err;
  }
  return undefined;
}

/** Everything a person or a log shipper could print of `err`. */
function everyText(err: unknown): string {
  const texts: string[] = [inspect(err, { depth: Infinity, showHidden: true })];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 10; depth++) {
    if (typeof e !== 'object' || e === null) break;
    const error = e as Error & Record<string, unknown>;
    texts.push(String(error.message), String(error.stack));
    texts.push(JSON.stringify(error, Object.getOwnPropertyNames(error)));
    for (const key of Object.getOwnPropertyNames(error)) texts.push(String(error[key]));
    e = error.cause;
  }
  return texts.join('\n');
}

describe('bootstrap errors never carry the connection password', () => {
  const cases: Array<[string, string]> = [
    ['redis://:se/cret@127.0.0.1:7399', 'se/cret'],
    ['redis://:a/b@c@127.0.0.1:7399/0?password=Xq9&db=1', 'a/b@c'],
    ['redis://default:Zq#Kv@127.0.0.1:7399', 'Zq#Kv'],
    ['redis://:50%Wq@127.0.0.1:7399', '50%Wq'],
    ['redis://127.0.0.1:7399/0?password=Jq@Zk', 'Jq@Zk'],
    ['http://:hunter22@127.0.0.1:7399', 'hunter22'],
  ];

  it.each(cases)('%s', async (url, password) => {
    const logger = new KeepLines();
    const err = await bootstrapError(url, logger);
    expect(err).toBeInstanceOf(EchoStreamConfigError);
    expect((err as Error).message).toMatch(
      /^EchoStreamModule: option 'connection' must be a redis:\/\/ or rediss:\/\/ URL or ioredis options, got (<invalid URL> \(.+\)|a URL of scheme 'http:')$/,
    );
    const printed = everyText(err) + logger.lines.join('\n');
    expect(printed).not.toContain(password);
    expect(printed).not.toContain(encodeURIComponent(password));
    expect((err as Record<string, unknown>).input).toBeUndefined();
  });

  it('a Cluster node given as a URL: refused at bootstrap, not at the first command', async () => {
    const logger = new KeepLines();
    const err = await bootstrapError(
      { cluster: { nodes: ['127.0.0.1:7000', 'redis://:se/cret@127.0.0.1:7001'] } },
      logger,
    );
    expect(err).toBeInstanceOf(EchoStreamConfigError);
    expect((err as Error).message).toMatch(
      /^EchoStreamModule: option 'cluster.nodes' must be .*, got <invalid URL> \(.+\)$/,
    );
    expect(everyText(err) + logger.lines.join('\n')).not.toContain('se/cret');
  });

  it('the connection factory, reached without the options check, throws the same way', () => {
    for (const [url, password] of cases.slice(0, 5)) {
      let thrown: unknown;
      try {
        createConnection({ connection: url, cluster: undefined }, 'shared', () => undefined);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(EchoStreamConfigError);
      expect((thrown as Error).message).toMatch(/^cannot use the Redis URL <invalid URL> \(.+\)$/);
      expect((thrown as Error).cause).toBeUndefined();
      expect(everyText(thrown)).not.toContain(password);
    }
  });
});
