import { parseArgs } from 'node:util';
import { errorText } from '../codec/codecs';
import { INVALID_URL, redactUrlsIn, viewRedisUrl } from '../config/redact-url';
import { openOneShotConnection, type OneShotConnection } from '../runtime/one-shot-connection';
import { CliError, COMMANDS, type CommandArgs, type CommandSpec } from './cli-commands';
import { printable, safeText } from './format';
import { standaloneServices } from './standalone';
import { isPageCursor } from '../stats/partition-pages';

const DEFAULT_URL = 'redis://127.0.0.1:6379';
const MAX_COUNT = 100_000;
const ENTRY_ID = /^\d{1,20}-\d{1,20}$/;

/** Where the CLI writes, what stops `tail --follow`, and whether a person can answer. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  signal: AbortSignal;
  env: Record<string, string | undefined>;
  /** stdin is a terminal: a command that moves data may ask before it does. */
  interactive: boolean;
  /** Shows `question` and resolves to the line typed (`''` when stdin ends first). */
  ask(question: string): Promise<string>;
}

const OPTIONS = {
  url: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  group: { type: 'string' },
  count: { type: 'string' },
  after: { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  from: { type: 'string' },
  to: { type: 'string' },
  'dry-run': { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
} as const;

/**
 * `echo-stream [--url redis://...] [--json] <command> ...`: runs one command against Redis through
 * the library's own Redis layer and services (no Nest app). Resolves to the exit code: 0, or 1
 * after one line on stderr (bad usage, refused connection, failed AUTH, missing key, WRONGTYPE),
 * or 2 when a command that moves data has no terminal to ask and no `--yes`.
 *
 * Everything printed goes through `printable` (hidden characters escaped), and the URL is shown
 * only redacted (`redis://***@host:port`), or as `<invalid URL>` when it cannot be used.
 */
export async function runCli(argv: string[], rawIo: CliIo): Promise<number> {
  const io: CliIo = {
    ...rawIo,
    out: (text) => rawIo.out(printable(text)),
    // a URL typed where a command or a value was expected is echoed only redacted
    err: (text) => rawIo.err(printable(redactUrlsIn(text))),
    ask: (question) => rawIo.ask(printable(question)),
  };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`echo-stream: ${message(err)} (see echo-stream --help)`);
    return 1;
  }
  const { values, positionals } = parsed;
  const [name, ...rest] = positionals;
  if (name === undefined || name === 'help') {
    io.out(usage());
    return values.help || name === 'help' ? 0 : 1;
  }
  const spec = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!spec) {
    io.err(
      `echo-stream: unknown command '${safeText(name)}' (commands: ${Object.keys(COMMANDS).join(', ')})`,
    );
    return 1;
  }
  if (values.help) {
    io.out(commandHelp(name, spec));
    return 0;
  }
  let args: CommandArgs;
  try {
    args = checkArgs(spec, values, rest);
  } catch (err) {
    io.err(`echo-stream ${name}: ${message(err)}`);
    return 1;
  }
  if (spec.moves && !args.yes && !args.dryRun && !io.interactive) {
    io.err(
      `echo-stream ${name}: no terminal to confirm on: pass --yes to move without asking (or --dry-run to see what would move)`,
    );
    return 2;
  }
  const url = values.url ?? io.env.REDIS_URL ?? DEFAULT_URL;
  const view = viewRedisUrl(url);
  if (!view.valid) {
    io.err(`echo-stream ${name}: cannot use the Redis URL ${INVALID_URL} (${view.problem})`);
    return 1;
  }
  let connection: OneShotConnection | undefined;
  try {
    connection = await connect(url, view.shown);
    const ctx = {
      ...connection,
      ...standaloneServices(connection.client),
      json: values.json === true,
      out: io.out,
      signal: io.signal,
      confirm: async (question: string) =>
        /^(y|yes)$/i.test((await io.ask(`${question} [y/N] `)).trim()),
    };
    await spec.run(ctx, args);
    return 0;
  } catch (err) {
    io.err(`echo-stream ${name}: ${message(err)}`);
    return 1;
  } finally {
    await connection?.close();
  }
}

/** Connects; a failure names the URL as `where` (redacted), the driver's text without any URL. */
async function connect(url: string, where: string): Promise<OneShotConnection> {
  try {
    return await openOneShotConnection(url);
  } catch (err) {
    const text = redactUrlsIn(errorText(err));
    if (/WRONGPASS|NOAUTH|invalid password|AUTH/i.test(text)) {
      throw new CliError(`Redis at ${where} refused the credentials: ${text}`);
    }
    throw new CliError(`cannot connect to Redis at ${where}: ${text}`);
  }
}

function checkArgs(
  spec: CommandSpec,
  values: Record<string, string | boolean | undefined>,
  positionals: string[],
): CommandArgs {
  for (const key of Object.keys(values)) {
    if (['url', 'json', 'help'].includes(key)) continue;
    if (!(spec.options as string[]).includes(key)) {
      throw new CliError(`option --${key} does not apply (usage: echo-stream ${spec.usage})`);
    }
  }
  if (positionals.length !== spec.positionals.length || positionals.some((p) => p === '')) {
    throw new CliError(
      `expected ${spec.positionals.map((p) => `<${p}>`).join(' ') || 'no argument'} (usage: echo-stream ${spec.usage})`,
    );
  }
  const args: CommandArgs = { positionals };
  if (typeof values.group === 'string') {
    if (values.group === '') throw new CliError('--group must not be empty');
    args.group = values.group;
  }
  if (typeof values.count === 'string') {
    const count = /^\d{1,9}$/.test(values.count) ? Number(values.count) : NaN;
    if (!(count >= 1 && count <= MAX_COUNT)) {
      throw new CliError(
        `--count must be an integer from 1 to ${MAX_COUNT}, got '${values.count}'`,
      );
    }
    args.count = count;
  }
  if (typeof values.after === 'string') {
    if (!isPageCursor(values.after))
      throw new CliError(
        `--after must be an entry id like 1700000000000-0 (<entry id>@<partition> on a partitioned stream), got '${values.after}'`,
      );
    args.after = values.after;
  }
  for (const key of ['from', 'to'] as const) {
    const value = values[key];
    if (typeof value !== 'string') continue;
    if (!ENTRY_ID.test(value) && !/^\d+$/.test(value) && Number.isNaN(Date.parse(value))) {
      throw new CliError(`--${key} must be a date (ISO 8601) or an entry id, got '${value}'`);
    }
    args[key] = value;
  }
  if (values.follow === true) args.follow = true;
  if (values['dry-run'] === true) args.dryRun = true;
  if (values.yes === true) args.yes = true;
  return args;
}

/** An error as one printable line (parseArgs and some replies span several), URLs redacted. */
function message(err: unknown): string {
  return safeText(
    redactUrlsIn(errorText(err))
      .trim()
      .replace(/\s*\n\s*/g, ' '),
  );
}

function usage(): string {
  return [
    'Usage: echo-stream [--url redis://host:port] [--json] <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).flatMap((c) => [`  ${c.usage}`, `      ${c.summary}`]),
    '',
    'Options:',
    `  --url <url>   Redis to talk to (default: $REDIS_URL, then ${DEFAULT_URL})`,
    '  --json        machine-readable output (tail --follow: one JSON object per line)',
    "  -h, --help    this help, or a command's: echo-stream <command> --help",
    '',
    'Options of redrive (the command that moves data):',
    '  --dry-run     say how many dead letters would move, and which, and move nothing',
    '  -y, --yes     move without asking; without a terminal, redrive refuses (exit code 2)',
    '                unless --yes or --dry-run is given',
    '',
    'Credentials in --url / $REDIS_URL are never printed: URLs show as redis://***@host:port.',
    'Percent-encode / ? # @ % in a password (%2F %3F %23 %40 %25).',
  ].join('\n');
}

function commandHelp(name: string, spec: CommandSpec): string {
  return [
    `Usage: echo-stream [--url <url>] [--json] ${spec.usage}`,
    '',
    `${name}: ${spec.summary}.`,
    ...(spec.details ?? []),
    '',
    `Example: ${spec.example}`,
  ].join('\n');
}
