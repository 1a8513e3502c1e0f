/**
 * The verdict "this entry can never be handled": a guard or a pipe of the Nest pipeline refused it
 * (SPEC §10). The consumer engine sends it to the dead-letter path at once, with reason
 * `'rejected'` and this error's message, instead of leaving it pending for redelivery.
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
