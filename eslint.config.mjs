// ESLint flat config: typescript-eslint's recommended rules on lib/, plus the layer rules of
// docs/ARCHITECTURE.md ("Layers"): folders import downward only, no import cycle, Nest and ioredis
// only where they belong. A wrong import fails `npm run lint`, and so `.ci/run`; `npm run lint`
// also runs madge, which fails on any import cycle between files (type-only imports included).
import tseslint from 'typescript-eslint';

/**
 * lib/'s folders from the top down. A folder may import the folders of the rows below its own,
 * never its own row's neighbours or anything above (index.ts, the public entry, sits on top).
 */
const LAYERS = [
  ['module'], // the Nest glue: the modules that wire everything below
  ['cli', 'dashboard'], // surfaces built on other surfaces
  ['admin', 'stats', 'producer'], // surfaces
  ['runtime'], // orchestrator, registry, connections, lifecycle runner
  ['discovery'], // decorators -> plain handler definitions
  ['decorators'], // metadata only
  ['handlers', 'tracing', 'lifecycle'], // what runs around a handler call and beside the loop
  ['consumer'], // the engine: the loop as a beat of collaborators
  ['redis'], // the only code that sends commands
  ['config'], // options and their defaults
  ['codec'], // payloads, entry ids, wire fields
  ['errors'],
  ['interfaces'],
];

/** Folders that must not import Nest: the engine, the Redis layer, codecs, configuration, leaves. */
const NO_NEST = new Set(['consumer', 'redis', 'codec', 'config', 'errors', 'interfaces']);

/** Surfaces: they reach lib/redis only through its role interfaces (type imports). */
const SURFACES = new Set(['cli', 'dashboard', 'admin', 'stats', 'producer']);

const folderRules = LAYERS.flatMap((row, level) =>
  row.map((folder) => {
    const above = LAYERS.slice(0, level + 1)
      .flat()
      .filter((other) => other !== folder);
    // a file of lib/<folder>/ or of one of its capability folders (lib/consumer/read/ ...)
    const ups = ['../', '../../'];
    const patterns = [
      {
        group: ups.flatMap((up) => [
          `${up}index`,
          ...above.flatMap((other) => [`${up}${other}`, `${up}${other}/*`]),
        ]),
        message: `lib/${folder} sits below these folders: import downward only (docs/ARCHITECTURE.md, "Layers").`,
      },
    ];
    if (NO_NEST.has(folder)) {
      patterns.push({
        group: ['@nestjs/*'],
        message: `lib/${folder} is plain TypeScript: no Nest (docs/ARCHITECTURE.md, "Layers").`,
      });
    }
    if (SURFACES.has(folder)) {
      patterns.push({
        group: ups.flatMap((up) => [
          `${up}redis/*`,
          `!${up}redis/stream-roles`,
          `!${up}redis/redis-errors`,
        ]),
        message:
          'A surface reaches lib/redis through its role interfaces (lib/redis/stream-roles.ts) and error predicates (lib/redis/redis-errors.ts) only; connections come from lib/runtime.',
      });
    }
    const paths = [
      ...['..', '../..'].map((name) => ({
        name,
        message: 'index.ts is the public entry: import what you need from its folder.',
      })),
      ...(folder === 'redis'
        ? []
        : [
            {
              name: 'ioredis',
              allowTypeImports: true,
              message:
                'Only lib/redis sends commands: import ioredis values there, types elsewhere.',
            },
          ]),
    ];
    return {
      files: [`lib/${folder}/**/*.ts`],
      rules: { '@typescript-eslint/no-restricted-imports': ['error', { paths, patterns }] },
    };
  }),
);

/**
 * The engine's capability folders (docs/ARCHITECTURE.md "The engine by capability"): `loop/` builds
 * and runs a loop from all the others, so none of them imports it.
 */
const ENGINE_CAPABILITIES = [
  'context',
  'read',
  'handle',
  'settle',
  'recover',
  'retry',
  'order',
  'partitions',
  'skip',
];
const engineRules = {
  files: ENGINE_CAPABILITIES.map((folder) => `lib/consumer/${folder}/**/*.ts`),
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: ['..', '../index'].map((name) => ({
          name,
          message: "lib/consumer/index.ts is the engine's public face, for the layers above.",
        })),
        patterns: [
          {
            group: ['../loop', '../loop/*'],
            message:
              'lib/consumer/loop builds and runs a loop from the capabilities: they never import it (docs/ARCHITECTURE.md).',
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['lib/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...folderRules,
  engineRules,
);
