/**
 * Turns a payload into stream fields and back.
 *
 * The entry's `id` field belongs to the producer (the branded id): it is never part of
 * `encode`'s result nor of `decode`'s input.
 */
export interface StreamCodec<T = unknown> {
  /** Payload -> field map (every value a string). */
  encode(payload: T): Record<string, string>;
  /** Field map (without `id`) -> payload. Throwing makes the entry a `decode_error`. */
  decode(fields: Record<string, string>): T;
}

/**
 * The codec of a handler or a publish call:
 * - `'json'` (default): fields `id` + `data` (JSON text of the payload);
 * - `'fields'`: the payload is every field except `id`, as `Record<string, string>`;
 * - a custom {@link StreamCodec}.
 */
export type CodecOption = 'json' | 'fields' | StreamCodec<unknown>;
