/** The one "unblock until the read returns" of the parked read and the shared read. */
import { unblockWhileParked } from '../../lib/consumer/read/unblock';

describe('unblockWhileParked', () => {
  it('one UNBLOCK that lands ends it', async () => {
    let parked = true;
    let sent = 0;
    await unblockWhileParked(
      () => parked,
      async () => {
        sent++;
        parked = false;
      },
      10,
      5,
    );
    expect(sent).toBe(1);
  });

  it('an UNBLOCK that overtook the read (or failed) is sent again until the park ends', async () => {
    let parked = true;
    let sent = 0;
    await unblockWhileParked(
      () => parked,
      async () => {
        sent++;
        if (sent === 2) throw new Error('NOPERM'); // denied once: tried again, never thrown
        if (sent === 3) parked = false;
      },
      10,
      5,
    );
    expect(sent).toBe(3);
  });

  it('gives up after `tries`, and sends nothing when the read already returned', async () => {
    let sent = 0;
    const started = Date.now();
    await unblockWhileParked(
      () => true,
      async () => void sent++,
      4,
      10,
    );
    expect(sent).toBe(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(30);
    sent = 0;
    await unblockWhileParked(
      () => false,
      async () => void sent++,
      4,
      10,
    );
    expect(sent).toBe(0);
  });
});
