/**
 * The sample's page served on `GET /`: what its handlers did (orders charged, duplicates skipped;
 * the ledger's balances per account, movements applied, order violations; dead letters
 * received), buttons that publish orders, and the way to the library's dashboard, which shows the
 * consumer loops, their groups, partitions, pending entries and the dead-letter stream (the
 * sample does not repeat those). Self-contained (no external assets); polls `GET /stats` every
 * second; every text from the server goes through `textContent`.
 */
export const SAMPLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nestjs-echo-stream sample</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --muted: #6b7385; --line: #e3e6ec;
          --ok: #1a7f37; --bad: #cf222e; --accent: #2f5fd0; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
         background: var(--bg); color: var(--ink); }
  header { display: flex; align-items: center; gap: 16px; padding: 14px 24px; flex-wrap: wrap;
           background: var(--card); border-bottom: 1px solid var(--line); }
  h1 { font-size: 18px; margin: 0; font-weight: 600; }
  h2 { font-size: 15px; margin: 24px 0 8px; font-weight: 600; }
  main { padding: 8px 24px 32px; max-width: 1240px; }
  .status { font-size: 12px; color: var(--muted); }
  .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px;
         background: var(--muted); vertical-align: middle; }
  .live .dot { background: var(--ok); }
  .offline .dot { background: var(--bad); }
  .actions { margin-left: auto; display: flex; gap: 8px; }
  button { font: inherit; font-size: 13px; padding: 5px 11px; border-radius: 6px; cursor: pointer;
           border: 1px solid var(--line); background: var(--card); color: var(--ink); }
  button:hover { border-color: var(--accent); color: var(--accent); }
  .ops { margin-top: 16px; padding: 10px 14px; background: #eef3ff; border: 1px solid #c9d7fb;
         border-radius: 8px; }
  .ops a { color: var(--accent); font-weight: 600; }
  .summary { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 16px; }
  .tile { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
          padding: 10px 14px; min-width: 140px; }
  .tile .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
  .tile .k { font-size: 12px; color: var(--muted); }
  table { width: 100%; border-collapse: collapse; background: var(--card); table-layout: fixed;
          border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
  th, td { padding: 8px 10px; text-align: left; border-bottom: 1px solid var(--line);
           overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  th { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted);
       background: #fafbfc; font-weight: 600; }
  td.err { color: var(--bad); font-size: 12px; white-space: normal; overflow-wrap: anywhere; }
  tr:last-child td { border-bottom: 0; }
  .empty { color: var(--muted); }
  .reason { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
  .sub { font-size: 12px; color: var(--muted); font-weight: 400; }
  .tile.good .v { color: var(--ok); }
  .tile.bad { border-color: var(--bad); }
  .tile.bad .v { color: var(--bad); }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  #balances { max-width: 760px; }
</style>
</head>
<body>
<header>
  <h1>Orders and ledger</h1>
  <span id="status" class="status"><span class="dot"></span><span id="status-text">connecting</span></span>
  <div class="actions">
    <button id="publish-one" type="button">Publish order</button>
    <button id="publish-many" type="button">Publish 20</button>
    <button id="publish-twice" type="button" title="the same order id twice, as a checkout retrying after a timeout">Publish twice</button>
    <button id="publish-poison" type="button">Publish poison</button>
  </div>
</header>
<main>
  <p class="ops" id="ops">Consumer loops, their groups, the ledger's partitions and who owns them,
    pending entries and the dead-letter stream (redrive, delete):
    <a id="dashboard-link" href="/echo-stream">open the echo-stream dashboard</a>.</p>
  <h2>Orders <span class="sub">(stream <code>orders</code>, groups <code>billing</code> and
    <code>shipping</code> with <code>dedup</code>; figures of this process)</span></h2>
  <div class="summary">
    <div class="tile"><div class="v" id="sum-charged">-</div><div class="k">orders charged</div></div>
    <div class="tile"><div class="v" id="sum-duplicates">-</div><div class="k">duplicates skipped (dedup)</div></div>
    <div class="tile"><div class="v" id="sum-dead">-</div><div class="k">dead letters received</div></div>
    <div class="tile"><div class="v" id="sum-failure">-</div><div class="k">FAILURE_RATE</div></div>
  </div>

  <h2>Ledger <span class="sub">(partitioned stream <code id="ledger-stream">ledger</code>,
    <span id="ledger-partitions">-</span> partitions by account, group <code>balances</code>: each
    account's movements in order, across every instance; figures of the shared book)</span></h2>
  <div class="summary">
    <div class="tile"><div class="v" id="sum-applied">-</div><div class="k">movements applied</div></div>
    <div class="tile" id="tile-violations"><div class="v" id="sum-violations">-</div><div class="k">order violations</div></div>
    <div class="tile"><div class="v" id="sum-replays">-</div><div class="k">redeliveries ignored</div></div>
    <div class="tile"><div class="v" id="sum-owned">-</div><div class="k">partitions owned here</div></div>
  </div>
  <h2>Balances <span class="sub" id="accounts-note"></span></h2>
  <table id="balances">
    <colgroup><col style="width:34%"><col style="width:18%"><col style="width:22%"><col></colgroup>
    <thead><tr><th>Account</th><th class="num">Partition</th><th class="num">Movements</th>
      <th class="num">Balance</th></tr></thead>
    <tbody><tr><td class="empty" colspan="4">no movements yet</td></tr></tbody>
  </table>

  <h2>Dead letters received <span class="sub">(by the sample's <code>@DeadLetter()</code> handler, newest first)</span></h2>
  <table id="dead">
    <colgroup><col style="width:9%"><col style="width:11%"><col style="width:12%"><col style="width:13%">
      <col style="width:19%"><col style="width:9%"><col></colgroup>
    <thead><tr><th>When</th><th>Reason</th><th>Stream/group</th><th>Entry</th><th>Id</th>
      <th>Deliveries</th><th>Error</th></tr></thead>
    <tbody><tr><td class="empty" colspan="7">none yet</td></tr></tbody>
  </table>
</main>
<script>
(function () {
  'use strict';
  var SHOWN_DEAD = 8;
  var seq = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(n) { return n === null || n === undefined ? '-' : Number(n).toLocaleString('en-US'); }
  function setStatus(ok, text) {
    document.getElementById('status').className = 'status ' + (ok ? 'live' : 'offline');
    document.getElementById('status-text').textContent = text;
  }

  function renderDead(recent) {
    var tbody = document.querySelector('#dead tbody');
    tbody.textContent = '';
    if (recent.length === 0) {
      var tr0 = el('tr');
      var td0 = el('td', 'empty', 'none yet');
      td0.colSpan = 7;
      tr0.appendChild(td0);
      tbody.appendChild(tr0);
      return;
    }
    recent.slice(0, SHOWN_DEAD).forEach(function (d) {
      var tr = el('tr');
      tr.appendChild(el('td', '', new Date(d.at).toLocaleTimeString()));
      tr.appendChild(el('td', 'reason', d.reason));
      tr.appendChild(el('td', '', d.stream + '/' + d.group));
      tr.appendChild(el('td', '', d.entryId));
      tr.appendChild(el('td', '', d.id || '-'));
      tr.appendChild(el('td', '', String(d.attempts)));
      tr.appendChild(el('td', 'err', d.error || ''));
      tbody.appendChild(tr);
    });
  }

  function money(cents) {
    var sign = cents < 0 ? '-' : '';
    return sign + (Math.abs(cents) / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  function renderBalances(ledger) {
    var tbody = document.querySelector('#balances tbody');
    tbody.textContent = '';
    document.getElementById('accounts-note').textContent = ledger.accounts > ledger.balances.length
      ? '(the first ' + ledger.balances.length + ' of ' + num(ledger.accounts) + ' accounts)'
      : '(' + num(ledger.accounts) + ' accounts)';
    if (ledger.balances.length === 0) {
      var tr0 = el('tr');
      var td0 = el('td', 'empty', 'no movements yet');
      td0.colSpan = 4;
      tr0.appendChild(td0);
      tbody.appendChild(tr0);
      return;
    }
    ledger.balances.forEach(function (b) {
      var tr = el('tr');
      tr.setAttribute('data-account', b.account);
      tr.appendChild(el('td', '', b.account));
      tr.appendChild(el('td', 'num', String(b.partition)));
      tr.appendChild(el('td', 'num', num(b.seq)));
      tr.appendChild(el('td', 'num', money(b.balance)));
      tbody.appendChild(tr);
    });
  }

  function renderLedger(ledger) {
    document.getElementById('ledger-stream').textContent = ledger.stream;
    document.getElementById('ledger-partitions').textContent = String(ledger.partitions);
    document.getElementById('sum-applied').textContent = num(ledger.applied);
    document.getElementById('sum-violations').textContent = num(ledger.violations);
    document.getElementById('tile-violations').className = 'tile ' + (ledger.violations === 0 ? 'good' : 'bad');
    document.getElementById('sum-replays').textContent = num(ledger.replays);
    document.getElementById('sum-owned').textContent = ledger.ownedHere.length ? ledger.ownedHere.join(', ') : 'none';
    renderBalances(ledger);
  }

  function render(s) {
    document.getElementById('sum-charged').textContent = num(s.billing.charged);
    document.getElementById('sum-duplicates').textContent = num(s.billing.duplicates);
    document.getElementById('sum-dead').textContent = num(s.deadLetters.total);
    document.getElementById('sum-failure').textContent = String(s.failureRate);
    document.getElementById('dashboard-link').setAttribute('href', s.dashboard);
    renderLedger(s.ledger);
    renderDead(s.deadLetters.recent);
  }

  function tick() {
    var mine = ++seq;
    fetch('/stats', { cache: 'no-store' })
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.json();
      })
      .then(function (s) {
        if (mine !== seq) return;
        render(s);
        setStatus(true, 'live, updated ' + new Date(s.at).toLocaleTimeString());
      })
      .catch(function (e) { setStatus(false, 'offline: ' + e.message); })
      .then(function () { setTimeout(tick, 1000); });
  }

  var SKUS = ['A-1', 'B-7', 'C-3', 'D-9'];
  function newOrder(poison) {
    var body = { sku: SKUS[Math.floor(Math.random() * SKUS.length)], qty: 1 + Math.floor(Math.random() * 5) };
    if (poison) body.poison = true;
    return body;
  }
  function publish(body) {
    return fetch('/orders', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  document.getElementById('publish-one').onclick = function () { publish(newOrder(false)); };
  document.getElementById('publish-poison').onclick = function () { publish(newOrder(true)); };
  document.getElementById('publish-many').onclick = function () {
    for (var i = 0; i < 20; i++) publish(newOrder(false));
  };
  // The same order id posted again 1.5 s later, as a checkout that timed out would: billing's
  // dedup skips the copy once the first one is acked.
  document.getElementById('publish-twice').onclick = function () {
    var body = newOrder(false);
    body.id = 'web-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 8);
    publish(body).then(function () { setTimeout(function () { publish(body); }, 1500); });
  };

  tick();
})();
</script>
</body>
</html>
`;
