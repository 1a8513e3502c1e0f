/**
 * The layer rules of docs/ARCHITECTURE.md ("Layers") check themselves: `npm run lint` runs these
 * ESLint rules and madge. Here each rule is shown to refuse what it is for (and to let through what
 * it allows), by linting small sources as if they stood in a given folder of lib/.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = process.cwd();

interface Case {
  file: string;
  code: string;
}

/** Lints every case in one ESLint run (the project's config); the rule ids each case broke. */
function lint(cases: readonly Case[]): string[][] {
  const script = `
    const { ESLint } = require('eslint');
    const cases = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: ${JSON.stringify(root)} });
      const out = [];
      for (const c of cases) {
        const [result] = await eslint.lintText(c.code, { filePath: c.file });
        out.push(result.messages.map((m) => m.ruleId ?? m.message));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((err) => { console.error(err); process.exit(1); });`;
  const stdout = execFileSync(process.execPath, ['-e', script, JSON.stringify(cases)], {
    cwd: root,
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as string[][];
}

const RESTRICTED = '@typescript-eslint/no-restricted-imports';
/** The engine's capability rules and the index rules (docs/ARCHITECTURE.md "The engine by capability"). */
const BASE_RESTRICTED = 'no-restricted-imports';

describe('layer rules (npm run lint)', () => {
  let results: string[][];
  const cases: Array<Case & { name: string; refused: boolean; rule?: string }> = [
    {
      name: 'the engine imports Nest',
      file: 'lib/consumer/probe.ts',
      code: "import { Logger } from '@nestjs/common';\nexport const l = new Logger('x');\n",
      refused: true,
    },
    {
      name: 'configuration imports Nest',
      file: 'lib/config/probe.ts',
      code: "import { Injectable } from '@nestjs/common';\nexport const i = Injectable;\n",
      refused: true,
    },
    {
      name: 'the Redis layer imports Nest',
      file: 'lib/redis/probe.ts',
      code: "import { Logger } from '@nestjs/common';\nexport const l = Logger;\n",
      refused: true,
    },
    {
      name: 'a codec imports Nest',
      file: 'lib/codec/probe.ts',
      code: "import { Logger } from '@nestjs/common';\nexport const l = Logger;\n",
      refused: true,
    },
    {
      name: 'a surface imports an ioredis value',
      file: 'lib/stats/probe.ts',
      code: "import { Redis } from 'ioredis';\nexport const r = Redis;\n",
      refused: true,
    },
    {
      name: 'configuration imports an ioredis type',
      file: 'lib/config/probe.ts',
      code: "import type { RedisOptions } from 'ioredis';\nexport type O = RedisOptions;\n",
      refused: false,
    },
    {
      name: 'the Redis layer imports an ioredis value',
      file: 'lib/redis/probe.ts',
      code: "import { Redis } from 'ioredis';\nexport const r = Redis;\n",
      refused: false,
    },
    {
      name: 'a surface reaches a Redis client class',
      file: 'lib/dashboard/probe.ts',
      code: "import type { RedisStreamsClient } from '../redis/streams-client';\nexport type C = RedisStreamsClient;\n",
      refused: true,
    },
    {
      name: 'a surface uses a role interface and an error predicate',
      file: 'lib/dashboard/probe.ts',
      code:
        "import type { StreamQueries } from '../redis/stream-roles';\n" +
        "import { isWrongTypeError } from '../redis/redis-errors';\n" +
        'export const f = (q: StreamQueries, e: unknown) => (isWrongTypeError(e) ? q : null);\n',
      refused: false,
    },
    {
      name: 'the engine imports upward (the runtime)',
      file: 'lib/consumer/probe.ts',
      code: "import type { ConsumerRegistry } from '../runtime/echo-stream.registry';\nexport type R = ConsumerRegistry;\n",
      refused: true,
    },
    {
      name: 'a leaf imports upward (interfaces -> errors)',
      file: 'lib/interfaces/probe.ts',
      code: "import type { EchoStreamConfigError } from '../errors/echo-stream-config.error';\nexport type E = EchoStreamConfigError;\n",
      refused: true,
    },
    {
      name: 'a surface imports a neighbour on its row (stats -> admin)',
      file: 'lib/stats/probe.ts',
      code: "import type { EchoStreamAdmin } from '../admin/echo-stream-admin.service';\nexport type A = EchoStreamAdmin;\n",
      refused: true,
    },
    {
      name: 'the runtime imports downward (engine, redis, config)',
      file: 'lib/runtime/probe.ts',
      code:
        "import type { StreamConsumer } from '../consumer';\n" +
        "import type { StreamsClient } from '../redis/stream-roles';\n" +
        "import { messages } from '../config/messages';\n" +
        'export type P = [StreamConsumer, StreamsClient, typeof messages];\n',
      refused: false,
    },
    {
      name: 'the runtime imports a file of the engine instead of its face (lib/consumer/index.ts)',
      file: 'lib/runtime/probe.ts',
      code: "import type { StreamConsumer } from '../consumer/loop/stream-consumer';\nexport type S = StreamConsumer;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: 'a capability of the engine imports one below it through its index (handle -> settle)',
      file: 'lib/consumer/handle/probe.ts',
      code: "import type { Settlement } from '../settle';\nexport type S = Settlement;\n",
      refused: false,
    },
    {
      name: "a capability imports a file of another instead of its index (handle -> settle's file)",
      file: 'lib/consumer/handle/probe.ts',
      code: "import type { Settlement } from '../settle/settlement';\nexport type S = Settlement;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: 'a capability imports one above it (settle -> handle)',
      file: 'lib/consumer/settle/probe.ts',
      code: "import type { Delivery } from '../handle';\nexport type D = Delivery;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: 'a capability imports loop/',
      file: 'lib/consumer/recover/probe.ts',
      code: "import type { StreamConsumer } from '../loop';\nexport type S = StreamConsumer;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: "a role folder of lib/redis imports another's index (loop -> connection)",
      file: 'lib/redis/loop/probe.ts',
      code: "import { CommandLink } from '../connection';\nexport const C = CommandLink;\n",
      refused: false,
    },
    {
      name: "a role folder of lib/redis imports another's file (loop -> connection's file)",
      file: 'lib/redis/loop/probe.ts',
      code: "import { CommandLink } from '../connection/command-link';\nexport const C = CommandLink;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: 'the lifecycle imports a file of a role folder of lib/redis instead of its index',
      file: 'lib/lifecycle/probe.ts',
      code: "import type { LifecycleClient } from '../redis/operator/lifecycle-client';\nexport type L = LifecycleClient;\n",
      refused: true,
      rule: BASE_RESTRICTED,
    },
    {
      name: 'a folder imports the public entry',
      file: 'lib/stats/probe.ts',
      code: "import type { EchoStreamModule } from '..';\nexport type M = EchoStreamModule;\n",
      refused: true,
    },
  ];

  beforeAll(() => {
    results = lint(cases);
  }, 60_000);

  for (const [i, c] of cases.entries()) {
    it(`${c.refused ? 'refuses' : 'allows'}: ${c.name}`, () => {
      if (c.refused) expect(results[i]).toContain(c.rule ?? RESTRICTED);
      else expect(results[i]).toEqual([]);
    });
  }

  it('madge fails on an import cycle, type-only imports included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cycle-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b';\nexport type A = B[];\n");
      writeFileSync(join(dir, 'b.ts'), "import type { A } from './a';\nexport type B = A | 1;\n");
      const madge = () =>
        spawnSync(
          join(root, 'node_modules/.bin/madge'),
          ['--circular', '--extensions', 'ts', dir],
          {
            encoding: 'utf8',
          },
        );
      const withCycle = madge();
      expect(withCycle.status).toBe(1);
      expect(withCycle.stdout).toContain('a.ts > b.ts');
      writeFileSync(join(dir, 'b.ts'), 'export type B = 1;\n');
      expect(madge().status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
