import { sleep } from '../context';

/**
 * Ends a parked read early: CLIENT UNBLOCK (`interrupt`), sent again every `everyMs` while the
 * same park lasts (`stillParked`), at most `tries` times. Repeated because the UNBLOCK can overtake
 * the read it targets on the wire (it reaches the server before the read parks, and finds nothing
 * to end). A failed UNBLOCK (denied by an ACL, the link down) is tried again like one that came
 * too early; the read then ends with its BLOCK timeout at the latest.
 */
export async function unblockWhileParked(
  stillParked: () => boolean,
  interrupt: () => Promise<unknown>,
  tries: number,
  everyMs: number,
): Promise<void> {
  for (let n = 0; n < tries && stillParked(); n++) {
    await interrupt().catch(() => undefined);
    if (!stillParked()) return;
    await sleep(everyMs);
  }
}
