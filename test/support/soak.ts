/**
 * Soak mode, `ECHO_SOAK=1` (docs/testing.md "Soaks"): the suite's long loops run at their full
 * length. `npm test` runs their short versions, which check the same invariants on less data.
 */

/** True under `ECHO_SOAK=1`. @default false */
export function soaking(): boolean {
  return process.env.ECHO_SOAK === '1';
}

/** `short` under `npm test`, `long` under `ECHO_SOAK=1`. */
export function soakOr<T>(short: T, long: T): T {
  return soaking() ? long : short;
}
