/** The turn of keyed lanes' XACKs (lib/consumer/order/ack-turn.ts): one write for the loops of a turn. */
import { AckTurn } from '../../lib/consumer/order/ack-turn';

/** A link that logs what runs inside and outside `together`. */
function loggingLink() {
  const log: string[] = [];
  let inside = false;
  const link = {
    together(send: () => void): void {
      log.push('together(');
      inside = true;
      try {
        send();
      } finally {
        inside = false;
        log.push(')');
      }
    },
  };
  const send = (name: string) => () => void log.push(inside ? name : `${name} (alone)`);
  return { link, log, send };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AckTurn', () => {
  it('the sends asked for in one turn run in the next, in order, inside one together()', async () => {
    const { link, log, send } = loggingLink();
    const turn = new AckTurn(link);
    turn.request(send('loop 0'));
    turn.request(send('loop 3'));
    await Promise.resolve(); // a microtask later is still this turn
    turn.request(send('loop 5'));
    expect(log).toEqual([]); // nothing before the turn comes

    await nextTurn();

    expect(log).toEqual(['together(', 'loop 0', 'loop 3', 'loop 5', ')']);
  });

  it('a send asked for while the turn runs (or after it) goes in the next one, again together', async () => {
    const { link, log, send } = loggingLink();
    const turn = new AckTurn(link);
    turn.request(() => {
      send('first')();
      turn.request(send('asked during the turn'));
    });

    await nextTurn();
    expect(log).toEqual(['together(', 'first', ')']);
    await nextTurn();

    expect(log).toEqual(['together(', 'first', ')', 'together(', 'asked during the turn', ')']);
  });

  it('a link without together() (a test fake): the sends of a turn still run, in order', async () => {
    const ran: string[] = [];
    const turn = new AckTurn({});
    turn.request(() => ran.push('a'));
    turn.request(() => ran.push('b'));

    await nextTurn();

    expect(ran).toEqual(['a', 'b']);
  });
});
