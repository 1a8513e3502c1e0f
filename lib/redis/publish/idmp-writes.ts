import type { IdempotentItem } from './idempotent-roles';
import { IDMP_ADD_SCRIPT } from './idmp-add.script';
import { idmpProducerOf } from './idmp-streams';

/** One command: its name, then its arguments. */
type Command = Array<string | number>;

/**
 * The XADD ... IDMP of one item: its branded id the idempotent id, under the producer id of its
 * bucket; NOMKSTREAM, so a stream deleted since it was set up is not created again with the
 * server's default window (the reply is then nil).
 */
export function idmpAddOf(stream: string, item: IdempotentItem, maxLen?: number): Command {
  const args: Command = ['XADD', stream, 'NOMKSTREAM', 'IDMP', idmpProducerOf(item.id), item.id];
  if (maxLen !== undefined) args.push('MAXLEN', '~', maxLen);
  args.push('*', ...item.fields);
  return args;
}

/** The numkeys, KEYS and ARGV of the IDMP-add script (idmp-add.script.ts) for `items`. */
export function idmpScriptArgs(
  stream: string,
  items: readonly IdempotentItem[],
  maxLen?: number,
): Command {
  const args: Command = [1, stream, maxLen ?? ''];
  for (const item of items)
    args.push(idmpProducerOf(item.id), item.id, item.fields.length, ...item.fields);
  return args;
}

/**
 * The one command writing `items` through IDMP inside a pipeline (a durable write's, before its
 * WAIT): the XADD for one item, else the script by its text (EVAL: a NOSCRIPT would come back
 * with the WAIT already run for nothing).
 */
export function idmpPipelinedCommand(
  stream: string,
  items: readonly IdempotentItem[],
  maxLen?: number,
): Command {
  return items.length === 1
    ? idmpAddOf(stream, items[0], maxLen)
    : ['EVAL', IDMP_ADD_SCRIPT, ...idmpScriptArgs(stream, items, maxLen)];
}

/**
 * The entry ids, one per item, of an IDMP write's reply (an XADD's id, or the script's list);
 * `null` when the stream did not exist (nothing written).
 */
export function idmpEntryIds(reply: unknown): string[] | null {
  if (reply === null || reply === undefined) return null;
  return Array.isArray(reply) ? reply.map(String) : [String(reply)];
}
