import { parseArgs } from 'node:util';
import { errorText } from '../codec/codecs';
import { openOneShotConnection, type OneShotConnection } from '../redis/stream-browser';
import { CliError, COMMANDS, type CommandArgs, type CommandSpec } from './cli-commands';
import { safeText } from './format';
import { standaloneServices } from './standalone';

const DEFAULT_URL = 'redis://127.0.0.1:6379';
const MAX_COUNT = 100_000;
const ENTRY_ID = /^\d{1,20}-\d{1,20}$/;

/** Where the CLI writes, and what stops `tail --follow`. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  signal: AbortSignal;
  env: Record<string, string | undefined>;
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
} as const;

/**
 * `echo-stream [--url redis://...] [--json] <command> ...`: runs one command against Redis through
 * the library's own Redis layer and services (no Nest app). Resolves to the exit code: 0, or 1
 * after one line on stderr (bad usage, refused connection, failed AUTH, missing key, WRONGTYPE).
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
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
  const url = values.url ?? io.env.REDIS_URL ?? DEFAULT_URL;
  let connection: OneShotConnection | undefined;
  try {
    connection = await connect(url);
    const ctx = {
      ...connection,
      ...standaloneServices(connection.client),
      json: values.json === true,
      out: io.out,
      signal: io.signal,
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

async function connect(url: string): Promise<OneShotConnection> {
  try {
    return await openOneShotConnection(url);
  } catch (err) {
    const text = errorText(err);
    const where = url.replace(/\/\/([^@/]*)@/, '//***@');
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
    if (!ENTRY_ID.test(values.after))
      throw new CliError(`--after must be an entry id like 1700000000000-0, got '${values.after}'`);
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
  return args;
}

/** An error as one printable line (parseArgs and some replies span several). */
function message(err: unknown): string {
  return safeText(
    errorText(err)
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
  ].join('\n');
}

function commandHelp(name: string, spec: CommandSpec): string {
  return [
    `Usage: echo-stream [--url <url>] [--json] ${spec.usage}`,
    '',
    `${name}: ${spec.summary}.`,
    '',
    `Example: ${spec.example}`,
  ].join('\n');
}
