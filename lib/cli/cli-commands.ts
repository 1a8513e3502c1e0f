import { letters, planRedrive, printPlan } from './redrive-plan';
import type { CommandContext } from './command-context';
import { fieldsToRecord } from '../codec/codecs';
import { fieldsText } from '../codec/fields-text';
import { duration, featureLine, safeText, table } from './format';
import { inspectPartitioned } from './partition-inspect';
import { CliError } from './cli-error';
import {
  groupNamesOf,
  partitionCountOf,
  requireStream,
  requireStreamOrPartitioned,
} from './stream-checks';
import { pendingOfPartitioned, tailOfPartitioned } from './partitioned-lists';
import { listStreams } from './stream-listing';
import { isEntryId } from '../codec/entry-id';

export type { CommandContext } from './command-context';
export { CliError } from './cli-error';

/** The options a command was given, already checked. */
export interface CommandArgs {
  positionals: string[];
  group?: string;
  count?: number;
  after?: string;
  follow?: boolean;
  from?: string;
  to?: string;
  /** `--dry-run`: say what would move, move nothing. */
  dryRun?: boolean;
  /** `--yes`: move without asking. */
  yes?: boolean;
}

/** The options a command may take besides `--url`, `--json` and `--help`. */
export type CommandOption =
  'group' | 'count' | 'after' | 'follow' | 'from' | 'to' | 'dry-run' | 'yes';

/** One command: usage, the options it takes, how many positionals, and what it does. */
export interface CommandSpec {
  usage: string;
  summary: string;
  options: CommandOption[];
  positionals: string[];
  example: string;
  /** More lines of `<command> --help`. */
  details?: string[];
  /**
   * It moves data: without a terminal to ask on, it runs only with `--yes` (or `--dry-run`);
   * otherwise the CLI refuses with exit code 2 before connecting.
   */
  moves?: true;
  run(ctx: CommandContext, args: CommandArgs): Promise<void>;
}

/** Every command of the CLI, by name, in the order `--help` lists them. */
export const COMMANDS: Record<string, CommandSpec> = {
  streams: {
    usage: 'streams',
    summary:
      'the stream keys on the server, with their length and number of groups; a partitioned stream once, with its partitions',
    options: [],
    positionals: [],
    example: 'echo-stream streams',
    run: listStreams,
  },

  inspect: {
    usage: 'inspect <stream>',
    summary: 'groups and consumers of a stream: pending, lag, oldest pending, dead letters',
    options: [],
    positionals: ['stream'],
    example: 'echo-stream inspect orders',
    async run(ctx, { positionals: [stream] }) {
      // a partitioned stream: no stream of that name, its partitions and their owners
      if ((await ctx.browser.keyType(stream)) === 'none' && (await inspectPartitioned(ctx, stream)))
        return;
      await requireStream(ctx, stream);
      const [length, groups, features] = await Promise.all([
        ctx.client.length(stream),
        ctx.client.groups(stream),
        ctx.stats.serverFeatures(),
      ]);
      const inspected = await Promise.all(
        groups.map(async (g) => {
          const [inspection, pausedSince] = await Promise.all([
            ctx.stats.inspect(stream, g.name),
            ctx.admin.pausedSince(stream, g.name),
          ]);
          return {
            group: g.name,
            ...inspection,
            paused: pausedSince !== null,
            pausedSince: pausedSince?.toISOString() ?? null,
          };
        }),
      );
      if (ctx.json)
        return ctx.out(
          JSON.stringify({ stream, length, groups: inspected, serverFeatures: features }),
        );
      ctx.out(`stream ${safeText(stream)}: ${length} entries, ${groups.length} group(s)`);
      ctx.out(`server features: ${featureLine(features)}`);
      if (inspected.length === 0) return;
      ctx.out(
        table(
          ['GROUP', 'CONSUMERS', 'PENDING', 'LAG', 'OLDEST PENDING', 'DEAD LETTERS'],
          inspected.map((g) => [
            g.group,
            g.consumers.length,
            g.pending,
            g.lag ?? '-',
            duration(g.oldestPendingMs),
            g.deadLetters,
          ]),
          ['CONSUMERS', 'PENDING', 'LAG', 'OLDEST PENDING', 'DEAD LETTERS'],
        ),
      );
      for (const g of inspected.filter((each) => each.pausedSince !== null)) {
        ctx.out(`group ${safeText(g.group)} is paused since ${g.pausedSince}`);
      }
      const consumers = inspected.flatMap((g) =>
        g.consumers.map((c) => [g.group, c.name, c.pending, duration(c.idleMs)]),
      );
      if (consumers.length > 0) {
        ctx.out('');
        ctx.out(table(['GROUP', 'CONSUMER', 'PENDING', 'IDLE'], consumers, ['PENDING', 'IDLE']));
      }
    },
  },

  pending: {
    usage: 'pending <stream> <group> [--count n] [--after entry-id]',
    summary:
      "one page of a group's pending entries (PEL): entry, consumer, idle, deliveries; a partitioned stream's partitions merged (--after <entry id>@<partition>)",
    options: ['count', 'after'],
    positionals: ['stream', 'group'],
    example: 'echo-stream pending orders billing --count 20',
    async run(ctx, { positionals: [stream, group], count = 50, after }) {
      const partitions = await partitionCountOf(ctx, stream);
      if (partitions !== null) {
        return pendingOfPartitioned(ctx, stream, partitions, group, count, after);
      }
      if (after !== undefined && !isEntryId(after)) {
        throw new CliError(`--after: <entry id>@<partition> pages a partitioned stream only`);
      }
      const info = (await ctx.client.groups(stream)).find((g) => g.name === group);
      if (!info) throw new CliError(`stream '${stream}' has no group '${group}'`);
      const rows = await ctx.client.pending(stream, group, {
        start: after === undefined ? '-' : `(${after}`,
        end: '+',
        count,
      });
      const next = rows.length === count ? rows[rows.length - 1].entryId : null;
      if (ctx.json) {
        return ctx.out(
          JSON.stringify({ stream, group, pending: info.pending, entries: rows, next }),
        );
      }
      ctx.out(`${info.pending} pending in ${safeText(stream)}/${safeText(group)}`);
      if (rows.length === 0) return;
      ctx.out(
        table(
          ['ENTRY', 'CONSUMER', 'IDLE', 'DELIVERIES'],
          rows.map((r) => [r.entryId, r.consumer, duration(r.idleMs), r.deliveries]),
          ['IDLE', 'DELIVERIES'],
        ),
      );
      if (next) ctx.out(`next page: --after ${next}`);
    },
  },

  'dead-letters': {
    usage: 'dead-letters <stream> [--group g] [--count n] [--after entry-id]',
    summary: "a stream's dead letters, oldest first: reason, attempts, when, error",
    options: ['group', 'count', 'after'],
    positionals: ['stream'],
    example: 'echo-stream dead-letters orders --group billing',
    async run(ctx, { positionals: [stream], group, count = 100, after }) {
      await requireStreamOrPartitioned(ctx, stream);
      const letters = await ctx.admin.deadLetters(stream, { group, count, after });
      if (ctx.json) return ctx.out(JSON.stringify(letters));
      if (letters.length === 0) return ctx.out(`no dead letters of ${safeText(stream)}`);
      // a partitioned stream's letters say which partition and key they came from
      const partitioned = letters.some((l) => l.partition !== undefined || l.key !== undefined);
      const where = (l: (typeof letters)[number]) =>
        partitioned ? [l.partition ?? '-', l.key ?? '-'] : [];
      ctx.out(
        table(
          [
            'ENTRY',
            'GROUP',
            ...(partitioned ? ['PARTITION', 'KEY'] : []),
            'REASON',
            'ATTEMPTS',
            'AT',
            'ID',
            'ERROR',
          ],
          letters.map((l) => [
            l.entryId,
            l.group,
            ...where(l),
            l.reason,
            l.attempts,
            l.at.toISOString(),
            l.id ?? '-',
            l.error ?? '',
          ]),
          ['ATTEMPTS', 'PARTITION'],
        ),
      );
    },
  },

  redrive: {
    usage: 'redrive <stream> [--group g] [--count n] [--dry-run] [--yes]',
    summary:
      'moves dead letters back to the stream, oldest first (copy, then delete); asks first on a terminal',
    options: ['group', 'count', 'dry-run', 'yes'],
    positionals: ['stream'],
    example: 'echo-stream redrive orders --group billing --count 10 --dry-run',
    details: [
      '',
      '  --dry-run   say how many dead letters would move, and which (up to 20 ids; 100 with',
      '              --json), and move nothing',
      '  -y, --yes   move without asking',
      'On a terminal without --yes it asks "Move N dead letters of <stream> back to their',
      'streams? [y/N]" and moves at most those N on y or yes (exit code 1 on any other answer).',
      'Without a terminal it refuses unless --yes or --dry-run is given (exit code 2).',
      'It prints how many moved, 0 included ("moved 0 dead letters"); exit code 0 when it ran.',
    ],
    moves: true,
    async run(ctx, { positionals: [stream], group, count, dryRun = false, yes = false }) {
      await requireStreamOrPartitioned(ctx, stream);
      let limit = count;
      if (dryRun || !yes) {
        const plan = await planRedrive(ctx, stream, group, count);
        if (dryRun) return printPlan(ctx, stream, plan);
        if (plan.total > 0) {
          const question = `Move ${plan.total} ${letters(plan.total)} of ${safeText(stream)} back to their streams?`;
          if (!(await ctx.confirm(question))) {
            throw new CliError(`not confirmed: moved 0 dead letters of ${stream}`);
          }
        }
        // at most the letters announced: ones dead-lettered since then wait for the next redrive
        limit = plan.total;
      }
      const redriven = limit === 0 ? 0 : await ctx.admin.redrive(stream, { group, count: limit });
      if (ctx.json) return ctx.out(JSON.stringify({ stream, redriven }));
      ctx.out(`moved ${redriven} ${letters(redriven)} back to ${safeText(stream)}`);
    },
  },

  pause: {
    usage: 'pause <stream> <group>',
    summary:
      "stops every process's loops of the group on the stream from reading and starting entries, until resumed",
    options: [],
    positionals: ['stream', 'group'],
    example: 'echo-stream pause orders billing',
    details: [
      '',
      'Within claimIntervalMs each loop of the group on the stream stops reading, sweeping and',
      'claiming: entries in hand finish, waiting retries keep waiting, nothing is released. It',
      'lasts (a key in Redis) until `echo-stream resume`, across restarts. On a partitioned',
      'stream (its name, not `<stream>:p:<i>`) it holds every partition loop of the group.',
    ],
    async run(ctx, { positionals: [stream, group] }) {
      if (!(await groupNamesOf(ctx, stream)).includes(group)) {
        throw new CliError(`no group '${group}' on stream '${stream}'`);
      }
      const was = await ctx.admin.isPaused(stream, group);
      if (!was) await ctx.admin.pause(stream, group);
      if (ctx.json) return ctx.out(JSON.stringify({ stream, group, paused: true, was }));
      ctx.out(
        was
          ? `group ${safeText(group)} on ${safeText(stream)} was already paused`
          : `paused group ${safeText(group)} on ${safeText(stream)}`,
      );
    },
  },

  resume: {
    usage: 'resume <stream> <group>',
    summary: 'lets the loops of a paused group read again (within claimIntervalMs)',
    options: [],
    positionals: ['stream', 'group'],
    example: 'echo-stream resume orders billing',
    async run(ctx, { positionals: [stream, group] }) {
      const was = await ctx.admin.resume(stream, group);
      if (ctx.json) return ctx.out(JSON.stringify({ stream, group, paused: false, was }));
      ctx.out(
        was
          ? `resumed group ${safeText(group)} on ${safeText(stream)}`
          : `group ${safeText(group)} on ${safeText(stream)} was not paused`,
      );
    },
  },

  tail: {
    usage: 'tail <stream> [--count n] [--follow]',
    summary:
      "the newest entries (oldest of them first); --follow waits for more until Ctrl-C; a partitioned stream's partitions merged",
    options: ['count', 'follow'],
    positionals: ['stream'],
    example: 'echo-stream tail orders --count 5 --follow',
    async run(ctx, { positionals: [stream], count = 10, follow = false }) {
      const partitions = await partitionCountOf(ctx, stream);
      if (partitions !== null) return tailOfPartitioned(ctx, stream, partitions, count, follow);
      const newest = (await ctx.browser.revRange(stream, '+', '-', count)).reverse();
      const print = (entries: typeof newest) => {
        for (const e of entries) {
          if (ctx.json) ctx.out(JSON.stringify({ entryId: e.entryId, fields: record(e.fields) }));
          else
            ctx.out(
              `${e.entryId}  ${safeText(e.fields === null ? '(deleted)' : fieldsText(e.fields))}`,
            );
        }
      };
      if (ctx.json && !follow) {
        return ctx.out(
          JSON.stringify(newest.map((e) => ({ entryId: e.entryId, fields: record(e.fields) }))),
        );
      }
      print(newest);
      let last = newest.length > 0 ? newest[newest.length - 1].entryId : '0-0';
      while (follow && !ctx.signal.aborted) {
        const more = await ctx.browser.readAfter(stream, last, 1000, 100);
        print(more);
        if (more.length > 0) last = more[more.length - 1].entryId;
      }
    },
  },

  history: {
    usage: 'history <stream> --from <date|entry-id> [--to <date|entry-id>] [--count n]',
    summary: 'entries between two times or entry ids (EchoStreamAdmin.history)',
    options: ['from', 'to', 'count'],
    positionals: ['stream'],
    example: 'echo-stream history orders --from 2026-11-30T10:00:00Z --to 2026-11-30T11:00:00Z',
    async run(ctx, { positionals: [stream], from, to, count = 100 }) {
      if (from === undefined) throw new CliError('history needs --from <date|entry-id>');
      await requireStreamOrPartitioned(ctx, stream);
      const bound = (v: string | undefined) =>
        v === undefined || /^\d+(-\d+)?$/.test(v) ? v : new Date(v);
      const entries: Array<{
        entryId: string;
        partition?: number;
        at: string;
        fields: Record<string, string>;
      }> = [];
      const window = { from: bound(from), to: bound(to), count };
      for await (const e of ctx.admin.history(stream, window)) {
        const { entryId, partition, fields } = e;
        // a partitioned stream's entries, merged: the partition says which one an id is of
        const where = partition === undefined ? {} : { partition };
        if (ctx.json) entries.push({ entryId, ...where, at: e.at.toISOString(), fields });
        else
          ctx.out(
            `${entryId}  ${partition === undefined ? '' : `p${partition}  `}${e.at.toISOString()}  ` +
              safeText(fieldsText(Object.entries(fields).flat())),
          );
      }
      if (ctx.json) ctx.out(JSON.stringify(entries));
    },
  },
};

function record(fields: readonly string[] | null): Record<string, string> | null {
  return fields === null ? null : fieldsToRecord(fields);
}
