/**
 * The verdict "this entry can never be handled": a guard or a pipe of the Nest pipeline refused it
 * (docs/delivery.md "Nest pipeline"). The consumer engine sends it to the dead-letter path at once,
 * with reason `'rejected'` and this error's message, instead of leaving it pending for redelivery.
 * Thrown by the package's Nest layer, never by a user's handler (internal).
 */
export class EntryRejectedError extends Error {
  constructor(
    message: string,
    /** What refused the entry: `'guard'` or `'pipe'`. */
    readonly by: 'guard' | 'pipe',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EntryRejectedError';
  }
}

/**
 * `err instanceof EntryRejectedError`, for any thrown value: `instanceof` reads the prototype
 * chain, which a hostile Proxy's `getPrototypeOf` trap can make throw, and the verdict for one
 * entry must never escape as a loop error (issue 10, defect 4).
 */
export function isEntryRejected(err: unknown): err is EntryRejectedError {
  try {
    return err instanceof EntryRejectedError;
  } catch {
    return false;
  }
}
