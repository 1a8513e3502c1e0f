import type { CommandContext } from './command-context';
import { safeText } from './format';

// What `echo-stream redrive` would move, counted before it asks (and all a --dry-run prints).

/** Ids a dry run lists (human output, --json). */
const PLAN_IDS_SHOWN = 20;
const PLAN_IDS_JSON = 100;
/** Dead letters read per page while counting what a redrive would move. */
const PLAN_PAGE = 500;

/** What a redrive would move: how many, and the first dead-letter ids, oldest first. */
interface RedrivePlan {
  total: number;
  entryIds: string[];
}

/**
 * Counts the letters `EchoStreamAdmin.redrive()` would move with the same group and count: the
 * dead letters of `stream` that hold original fields (it leaves the others in place).
 */
export async function planRedrive(
  ctx: CommandContext,
  stream: string,
  group: string | undefined,
  count: number | undefined,
): Promise<RedrivePlan> {
  const limit = count ?? Number.POSITIVE_INFINITY;
  const plan: RedrivePlan = { total: 0, entryIds: [] };
  let after: string | undefined;
  while (plan.total < limit) {
    const asked = Math.min(PLAN_PAGE, limit - plan.total);
    const page = await ctx.admin.deadLetters(stream, { group, count: asked, after });
    for (const letter of page) {
      if (Object.keys(letter.fields).length === 0) continue;
      plan.total++;
      if (plan.entryIds.length < PLAN_IDS_JSON) plan.entryIds.push(letter.entryId);
    }
    if (page.length < asked) break;
    after = page[page.length - 1].entryId;
  }
  return plan;
}

export function printPlan(ctx: CommandContext, stream: string, plan: RedrivePlan): void {
  if (ctx.json) {
    const entryIds = plan.entryIds;
    return ctx.out(
      JSON.stringify({ stream, dryRun: true, wouldMove: plan.total, entryIds, moved: 0 }),
    );
  }
  ctx.out(
    `dry run: would move ${plan.total} ${letters(plan.total)} back to ${safeText(stream)}; moved 0`,
  );
  const shown = plan.entryIds.slice(0, PLAN_IDS_SHOWN);
  shown.forEach((id) => ctx.out(`  ${id}`));
  if (plan.total > shown.length) ctx.out(`  ... and ${plan.total - shown.length} more`);
}

/** `dead letter` or `dead letters`. */
export function letters(n: number): string {
  return n === 1 ? 'dead letter' : 'dead letters';
}
