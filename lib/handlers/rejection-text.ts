import { boundedText } from '../codec/bounded-text';
import { errorText } from '../codec/codecs';

/**
 * The text a rejected entry's dead letter carries: the exception's message plus the details of an
 * `HttpException`-like response (ValidationPipe puts class-validator's failed constraints there as
 * a list, one per constraint), so the dead letter says what was wrong without a log search.
 * Bounded as a whole like any error text (`boundedText`): a thousand failed constraints, or one
 * exception message of a megabyte, end in the same cut.
 */
export function rejectionText(err: unknown): string {
  return boundedText(wholeRejectionText(err));
}

function wholeRejectionText(err: unknown): string {
  const text = errorText(err, Infinity);
  const details = responseMessage(err);
  if (Array.isArray(details) && details.length > 0)
    return `${text}: ${details.map((d) => (typeof d === 'string' ? d : errorText(d, Infinity))).join('; ')}`;
  if (typeof details === 'string' && details.length > 0 && details !== text)
    return `${text}: ${details}`;
  return text;
}

function responseMessage(err: unknown): unknown {
  const getResponse = (err as { getResponse?: unknown } | null)?.getResponse;
  if (typeof err !== 'object' || typeof getResponse !== 'function') return undefined;
  try {
    const response: unknown = getResponse.call(err);
    return typeof response === 'object' && response !== null
      ? (response as { message?: unknown }).message
      : undefined;
  } catch {
    return undefined;
  }
}
