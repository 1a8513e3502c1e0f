/**
 * IdmpStreams: which idempotent writes go through the server's IDMP, the setup asked once per
 * stream (and again after `forget`), what never asks (a window past 24 h, a server or mode
 * without IDMP), and a refused setup: the script for that stream, one warning per connection.
 */
import { crc32 } from '../../lib/codec/partition-key';
import type { CommandLink, ServerFeatures } from '../../lib/redis/connection';
import {
  IDMP_MAX_SIZE,
  IDMP_PRODUCER_IDS,
  IdmpStreams,
  idmpProducerOf,
} from '../../lib/redis/publish/idmp-streams';

function fakes(has: boolean, answer: () => unknown = () => [600, IDMP_MAX_SIZE]) {
  const sent: Array<ReadonlyArray<string | number>> = [];
  const link = {
    sendScript: async (_script: string, _sha: string, tail: ReadonlyArray<string | number>) => {
      sent.push(tail);
      const got = answer();
      if (got instanceof Error) throw got;
      return got;
    },
  } as unknown as CommandLink;
  const features = { settled: async () => has } as unknown as ServerFeatures;
  return { link, features, sent };
}

describe('IdmpStreams', () => {
  it("spreads ids over 1024 producer ids by the id's crc32, the same in every process", () => {
    expect(idmpProducerOf('order-42')).toBe(`echo-stream:${crc32('order-42') % 1024}`);
    const used = new Set(Array.from({ length: 20_000 }, (_, i) => idmpProducerOf(`id-${i}`)));
    expect(used.size).toBe(IDMP_PRODUCER_IDS);
  });

  it('sets a stream up once (the window in whole seconds) and again after forget', async () => {
    const { link, features, sent } = fakes(true);
    const idmp = new IdmpStreams(link, features);
    expect(await idmp.takes('s', 600_000)).toBe(true);
    expect(await idmp.takes('s', 600_000)).toBe(true);
    expect(await idmp.takes('s', 300)).toBe(true); // another window: its own setup
    expect(sent).toEqual([
      [1, 's', 600, IDMP_MAX_SIZE],
      [1, 's', 1, IDMP_MAX_SIZE],
    ]);
    idmp.forget('s');
    expect(await idmp.takes('s', 600_000)).toBe(true);
    expect(sent).toHaveLength(3);
  });

  it('never asks past the 24 h ceiling, nor on a server (or in a mode) without IDMP', async () => {
    const native = fakes(true);
    expect(await new IdmpStreams(native.link, native.features).takes('s', 86_400_001)).toBe(false);
    expect(await new IdmpStreams(native.link, native.features).takes('s', 86_400_000)).toBe(true);
    const none = fakes(false);
    expect(await new IdmpStreams(none.link, none.features).takes('s', 1000)).toBe(false);
    expect(none.sent).toEqual([]);
  });

  it('a refused setup keeps that stream on the script, warned once per connection', async () => {
    const refusal = new Error("NOPERM User app has no permissions to run the 'xcfgset' command");
    const { link, features, sent } = fakes(true, () => refusal);
    const warnings: string[] = [];
    const idmp = new IdmpStreams(link, features, (line) => warnings.push(line));
    expect(await idmp.takes('a', 1000)).toBe(false);
    expect(await idmp.takes('a', 1000)).toBe(false);
    expect(await idmp.takes('b', 1000)).toBe(false);
    expect(sent.map((tail) => tail[1])).toEqual(['a', 'b']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^Idempotent publish to a uses the script, not the server's IDMP/);
  });

  it('another failure (a lost link) rejects and is not remembered', async () => {
    let fail = true;
    const { link, features } = fakes(true, () =>
      fail ? new Error('Connection is closed.') : [1, IDMP_MAX_SIZE],
    );
    const idmp = new IdmpStreams(link, features);
    await expect(idmp.takes('s', 1000)).rejects.toThrow('Connection is closed.');
    fail = false;
    expect(await idmp.takes('s', 1000)).toBe(true);
  });
});
