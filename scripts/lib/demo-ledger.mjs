/**
 * The demo's ledger producer: posts account movements to the sample the way a core-banking
 * system would, a statement at a time (`POST /ledger/statements`: several movements of one
 * account, in order, written by one call). Each account numbers its movements (1, 2, 3 ...) and
 * posts its statements one after another (the next once the previous answered), so the order
 * they are written in is the account's order; accounts go side by side. A statement's movements
 * then sit in one read together: only per-account order keeps them from overtaking each other. A
 * post that failed, and now and then one that succeeded (its answer "lost"), is posted again with
 * the same numbers: the sample publishes with `idempotent: true`, so the repeat answers the first
 * write's entry ids and writes nothing. It remembers what it posted, so the demo can check the
 * balances at the end.
 */

/** Every Nth statement is posted a second time after its answer, as after a lost reply. */
const REPEAT_EVERY = 5;
/** Attempts per statement when a post fails outright (the same numbers each time), and the pause. */
const ATTEMPTS = 5;
const PAUSE_MS = 200;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class LedgerTraffic {
  /**
   * @param {string} base the sample's URL
   * @param {string[]} accounts the accounts to post to
   */
  constructor(base, accounts) {
    this.base = base;
    this.accounts = accounts;
    /** account -> { seq: last number posted, balance: expected balance in cents } */
    this.book = new Map(accounts.map((a) => [a, { seq: 0, balance: 0 }]));
    /** account -> the tail of its chain of posts */
    this.chains = new Map();
    this.posted = 0;
    this.repeats = 0;
    this.absorbed = 0;
    /** Repeats that came back with another entry id: a movement written twice. */
    this.writtenTwice = 0;
    this.failed = 0;
    this.queued = 0;
    this.n = 0;
  }

  /** Starts each account from where the sample's book has it (a REDIS_URL used before). */
  seed(summary) {
    for (const b of summary.ledger.balances) {
      const mine = this.book.get(b.account);
      if (mine) Object.assign(mine, { seq: b.seq, balance: b.balance });
    }
  }

  /** Queues a statement of `count` movements of one account (the next account each call). */
  burst(count) {
    const account = this.accounts[this.n++ % this.accounts.length];
    const mine = this.book.get(account);
    const movements = Array.from({ length: count }, () => {
      const seq = ++mine.seq;
      const salt = seq * 131 + this.n * 977;
      return { seq, amount: seq % 3 === 1 ? 5000 + (salt % 5000) : -(100 + (salt % 2900)) };
    });
    const repeat = ++this.queued % REPEAT_EVERY === 0;
    const tail = this.chains.get(account) ?? Promise.resolve();
    this.chains.set(
      account,
      tail.then(() => this.post({ account, movements }, repeat)),
    );
  }

  async post(statement, repeat) {
    let receipts;
    for (let attempt = 1; attempt <= ATTEMPTS && receipts === undefined; attempt++) {
      try {
        receipts = await this.send(statement);
      } catch {
        // the same movements again: written at most once whatever the first attempt did
        await sleep(PAUSE_MS);
      }
    }
    if (receipts === undefined) {
      // given up: the account's next number then arrives out of order (a violation on the page)
      this.failed += statement.movements.length;
      return;
    }
    this.posted += statement.movements.length;
    for (const m of statement.movements) this.book.get(statement.account).balance += m.amount;
    if (!repeat) return;
    this.repeats++;
    try {
      const again = await this.send(statement);
      if (again.every((r, i) => r.entryId === receipts[i].entryId)) this.absorbed++;
      else this.writtenTwice++;
    } catch {
      // a repeat that failed changes nothing
    }
  }

  async send(statement) {
    const res = await fetch(`${this.base}/ledger/statements`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(statement),
    });
    if (res.status !== 202) throw new Error(`POST /ledger/statements -> ${res.status}`);
    return res.json();
  }

  /**
   * The sample's summary once the posts in flight answered and every account's last movement is
   * in the book (or after 5 s more): `read` fetches `GET /stats`.
   */
  async applied(read) {
    await Promise.race([Promise.all(this.chains.values()), sleep(5000)]);
    const deadline = Date.now() + 5000;
    for (;;) {
      const summary = await read();
      if (this.mismatches(summary).length === 0 || Date.now() > deadline) return summary;
      await sleep(200);
    }
  }

  /** What the end of the run says is wrong with the ledger, if anything. */
  problems(summary) {
    const problems = [];
    if (summary.ledger.violations > 0)
      problems.push(`ORDER VIOLATIONS: ${summary.ledger.violations} (see the app's log)`);
    if (this.writtenTwice > 0)
      problems.push(`${this.writtenTwice} repeated statement(s) were written twice`);
    for (const m of this.mismatches(summary)) {
      const got = m.got ? `movement ${m.got.seq}, balance ${m.got.balance}` : 'not on the page';
      problems.push(
        `${m.account}: posted up to movement ${m.expected.seq}, balance ${m.expected.balance}; the book has ${got}`,
      );
    }
    return problems;
  }

  /** Accounts whose balance on the page is not what was posted, once their last number is in. */
  mismatches(summary) {
    const shown = new Map(summary.ledger.balances.map((b) => [b.account, b]));
    return [...this.book].flatMap(([account, mine]) => {
      if (mine.seq === 0) return [];
      const got = shown.get(account);
      return got && got.seq === mine.seq && got.balance === mine.balance
        ? []
        : [{ account, expected: mine, got: got ?? null }];
    });
  }

  /** `retried publishes absorbed 12 of 12` (statements) and what went wrong, if anything. */
  figures() {
    const twice = this.writtenTwice > 0 ? `, WRITTEN TWICE ${this.writtenTwice}` : '';
    const failed = this.failed > 0 ? `, movements never posted ${this.failed}` : '';
    return `retried publishes absorbed ${this.absorbed} of ${this.repeats}${twice}${failed}`;
  }
}
