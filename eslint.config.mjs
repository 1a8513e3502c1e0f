// ESLint flat config: typescript-eslint's recommended rules on the TypeScript, ESLint's on the
// JavaScript (bench, scripts, test processes), plus the layer rules of docs/ARCHITECTURE.md
// ("Layers"): folders import downward only, no import cycle, Nest and ioredis only where they
// belong. A wrong import fails `npm run lint`, and so `.ci/run`; `npm run lint` also runs madge,
// which fails on any import cycle between files (type-only imports included).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * lib/'s folders from the top down. A folder may import the folders of the rows below its own,
 * never its own row's neighbours or anything above (index.ts, the public entry, sits on top).
 */
const LAYERS = [
  ['module'], // the Nest glue: the modules that wire everything below
  ['cli', 'dashboard', 'microservices'], // surfaces built on other surfaces (microservices: the Nest transport)
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
const SURFACES = new Set(['cli', 'dashboard', 'microservices', 'admin', 'stats', 'producer']);

/** The one folder that imports `@nestjs/microservices` (an optional peer, loaded only there). */
const MICROSERVICES = 'microservices';

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
    if (folder !== MICROSERVICES) {
      patterns.push({
        group: ['@nestjs/microservices', '@nestjs/microservices/*'],
        message: `Only lib/${MICROSERVICES} imports @nestjs/microservices, an optional peer (docs/ARCHITECTURE.md, "Layers").`,
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
 * The engine's capability folders (docs/ARCHITECTURE.md "The engine by capability"), from the floor
 * up: a capability imports the ones before it, each only through its index (its public face); `loop/`,
 * last, builds and runs a loop from all of them.
 */
const ENGINE_CAPABILITIES = [
  'context',
  'skip',
  'health',
  'limits',
  'retry',
  'commit',
  'settle',
  'read',
  'order',
  'handle',
  'recover',
  'partitions',
  'loop',
];
const engineRules = ENGINE_CAPABILITIES.map((folder, level) => {
  const above = ENGINE_CAPABILITIES.slice(level + 1);
  const below = ENGINE_CAPABILITIES.slice(0, level);
  return {
    files: [`lib/consumer/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['..', '../index', '.', './index'].map((name) => ({
            name,
            message:
              "lib/consumer/index.ts is the engine's face for the layers above, and a folder's index its face for the others: import your own folder's files directly.",
          })),
          patterns: [
            ...(above.length === 0
              ? []
              : [
                  {
                    group: above.flatMap((other) => [`../${other}`, `../${other}/*`]),
                    message: `lib/consumer/${folder} sits below these capabilities (and loop/ builds and runs a loop from all of them): import from the floor up only (docs/ARCHITECTURE.md, "The engine by capability").`,
                  },
                ]),
            ...(below.length === 0
              ? []
              : [
                  {
                    group: below.map((other) => `../${other}/*`),
                    message:
                      "A capability is reached through its index, its public face: import from '../<capability>', not from its files.",
                  },
                ]),
          ],
        },
      ],
    },
  };
});

/**
 * lib/redis by role (docs/ARCHITECTURE.md "Layers"): a role folder reaches another, and the layers
 * above reach any, through its index. `stream-roles.ts`, the leaf of role interfaces, names the
 * files that define them, so that its types load no driver code.
 */
const REDIS_ROLES = ['connection', 'loop', 'operator', 'partitions', 'publish'];
const redisRoleRules = [
  ...REDIS_ROLES.map((role) => ({
    files: [`lib/redis/${role}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: REDIS_ROLES.filter((other) => other !== role).map((other) => `../${other}/*`),
              message:
                "A role folder of lib/redis is reached through its index: import from '../<role>'.",
            },
          ],
        },
      ],
    },
  })),
  {
    files: [
      'lib/redis/streams-client.ts',
      'lib/redis/package-keys.ts',
      'lib/redis/redis-errors.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: REDIS_ROLES.map((role) => `./${role}/*`),
              message:
                "A role folder of lib/redis is reached through its index: import from './<role>'.",
            },
          ],
        },
      ],
    },
  },
];

/**
 * The layers above the engine reach it through lib/consumer/index.ts only, and lib/redis's role
 * folders through their indexes.
 */
const engineFaceRule = {
  files: LAYERS.flat()
    .filter((folder) => folder !== 'consumer')
    .map((folder) => `lib/${folder}/**/*.ts`),
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['../consumer/*', '../../consumer/*'],
            message:
              "The engine's public face is lib/consumer/index.ts: import from '../consumer'.",
          },
          {
            group: REDIS_ROLES.flatMap((role) => [`../redis/${role}/*`, `../../redis/${role}/*`]),
            message:
              "A role folder of lib/redis is reached through its index: import from '../redis/<role>'.",
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.bench/**',
      '.servers/**',
      '.sample-dist/**',
      'tmp/**',
      'temp/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['lib/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }] },
  },
  // the JavaScript beside the library (bench, scripts, test processes, the dashboard's page):
  // ESLint's recommended rules, so a name used where it is not defined fails lint
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    rules: js.configs.recommended.rules,
    languageOptions: { globals: globals.node },
  },
  {
    files: ['**/*.cjs', 'test/compat/**/*.js', 'test/upgrade/**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    files: ['lib/dashboard/assets/*.js'],
    languageOptions: { sourceType: 'script', globals: globals.browser },
  },
  ...folderRules,
  ...engineRules,
  engineFaceRule,
  ...redisRoleRules,
);
