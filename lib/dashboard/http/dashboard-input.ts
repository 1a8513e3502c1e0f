import {
  BadRequestException,
  ForbiddenException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { DEFAULT_PAGE_COUNT, MAX_PAGE_COUNT } from '../dashboard.constants';
import { originRefusal, type HostRules } from './host-check';

/** A stream entry id as the API accepts it: `<ms>-<seq>`, each part at most 2^64-1 (below). */
const ENTRY_ID = /^(\d{1,20})-(\d{1,20})$/;
/** The largest part of an entry id Redis accepts. */
const MAX_ID_PART = 2n ** 64n - 1n;
/** Longest stream or group name the API accepts. */
const MAX_NAME_LENGTH = 512;

/** The paging query of a list route: `?count=` and `?after=`. */
export interface PageQuery {
  count: number;
  after: string | undefined;
}

/** Body of `POST .../dead-letters/redrive`, checked. */
export interface RedriveBody {
  group?: string;
  count?: number;
  entryIds?: string[];
}

/**
 * Reads `?count=` (1..1000, default 50) and `?after=` (an entry id, or `<entry id>@<partition>`
 * on a partitioned stream: the route checks which its stream takes); anything else is a 400.
 */
export function parsePageQuery(query: Record<string, unknown>): PageQuery {
  const { count, after } = query;
  return {
    count: count === undefined ? DEFAULT_PAGE_COUNT : parseCount(count, 'count'),
    after: after === undefined ? undefined : parseCursor(after),
  };
}

/** A stream or group name from the URL: non-empty, at most 512 characters. */
export function parseName(value: unknown, what: 'stream' | 'group'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new BadRequestException(`${what} must be a name of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  return value;
}

/** The redrive body: `{}` (all) or any of `group`, `count`, `entryIds`; no other key. */
export function parseRedriveBody(body: unknown): RedriveBody {
  const fields = objectBody(body, ['group', 'count', 'entryIds']);
  const out: RedriveBody = {};
  if (fields.group !== undefined) out.group = parseName(fields.group, 'group');
  if (fields.count !== undefined) out.count = parseCount(fields.count, 'count');
  if (fields.entryIds !== undefined) out.entryIds = parseEntryIds(fields.entryIds);
  return out;
}

/** The delete body: `{ entryIds: [...] }` with at least one id. */
export function parseDeleteBody(body: unknown): { entryIds: string[] } {
  const fields = objectBody(body, ['entryIds']);
  if (fields.entryIds === undefined) throw new BadRequestException('entryIds is required');
  return { entryIds: parseEntryIds(fields.entryIds) };
}

/**
 * Refuses a mutation that is not a same-origin JSON request: the body must be
 * `application/json` (a cross-site form cannot send that without a CORS preflight), the
 * browser's `Sec-Fetch-Site`, when sent, must say `same-origin`, and `Origin` must name an allowed
 * host that is the host the request was sent to. A request without `Origin` is refused too.
 */
export function assertSameOriginJson(
  headers: Record<string, string | string[] | undefined>,
  allowedHosts: HostRules,
): void {
  const type = header(headers, 'content-type')?.split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    throw new UnsupportedMediaTypeException('mutations accept only Content-Type: application/json');
  }
  const site = header(headers, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') {
    throw new ForbiddenOrigin(`Sec-Fetch-Site is '${site.slice(0, 40)}'`);
  }
  const why = originRefusal(header(headers, 'origin'), header(headers, 'host'), allowedHosts);
  if (why !== undefined) throw new ForbiddenOrigin(why);
}

/** A 403 naming why a mutation's origin was refused. */
class ForbiddenOrigin extends ForbiddenException {
  constructor(why: string) {
    super(`cross-origin mutation refused: ${why}`);
  }
}

function header(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function objectBody(body: unknown, allowed: string[]): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestException('the body must be a JSON object');
  }
  const unknownKey = Object.keys(body).find((key) => !allowed.includes(key));
  if (unknownKey !== undefined) {
    throw new BadRequestException(
      `unknown field '${unknownKey.slice(0, 40)}' (allowed: ${allowed.join(', ')})`,
    );
  }
  return body as Record<string, unknown>;
}

function parseCount(value: unknown, what: string): number {
  const n = typeof value === 'string' && /^\d{1,7}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > MAX_PAGE_COUNT) {
    throw new BadRequestException(`${what} must be an integer from 1 to ${MAX_PAGE_COUNT}`);
  }
  return n;
}

function parseEntryId(value: unknown, what: string): string {
  const parts = typeof value === 'string' ? ENTRY_ID.exec(value) : null;
  if (parts === null || BigInt(parts[1]) > MAX_ID_PART || BigInt(parts[2]) > MAX_ID_PART) {
    throw new BadRequestException(
      `${what} must be a stream entry id like 1700000000000-0 (each part at most 2^64-1)`,
    );
  }
  return parts[0];
}

/** `<entry id>` or `<entry id>@<partition>` (at most 4 digits), the id checked as any other. */
function parseCursor(value: unknown): string {
  const text = typeof value === 'string' ? value : '';
  const at = text.indexOf('@');
  if (at < 0) return parseEntryId(value, 'after');
  const partition = text.slice(at + 1);
  if (!/^\d{1,4}$/.test(partition)) {
    throw new BadRequestException('after: the partition after @ must be a number of 1 to 4 digits');
  }
  return `${parseEntryId(text.slice(0, at), 'after')}@${Number(partition)}`;
}

function parseEntryIds(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_PAGE_COUNT) {
    throw new BadRequestException(
      `entryIds must be an array of 1 to ${MAX_PAGE_COUNT} stream entry ids`,
    );
  }
  return [...new Set(value.map((id) => parseEntryId(id, 'each of entryIds')))];
}
