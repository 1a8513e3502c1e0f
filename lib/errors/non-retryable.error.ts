/**
 * Thrown by a handler to say "retrying will not help": the entry goes to the dead-letter path at
 * once with reason `non_retryable` and this error's text. Any error whose `name` is
 * `'NonRetryableError'` counts too, so two copies of the package in one app still agree.
 *
 * @example
 * ```ts
 * if (!order.customerId) throw new NonRetryableError('order has no customer');
 * ```
 */
export class NonRetryableError extends Error {
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/**
 * True for a `NonRetryableError` of any copy of the package (matched by `name`). Never throws:
 * a thrown value may be a hostile Proxy whose traps throw, and its verdict is a plain failure.
 */
export function isNonRetryable(err: unknown): boolean {
  try {
    return (
      typeof err === 'object' &&
      err !== null &&
      (err instanceof NonRetryableError || (err as { name?: unknown }).name === 'NonRetryableError')
    );
  } catch {
    return false;
  }
}
