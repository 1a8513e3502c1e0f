/**
 * The orders page served on `GET /`: what the sample's handlers did with the orders (charged,
 * duplicates skipped, dead letters received), buttons that publish orders, and the way to the
 * library's dashboard, which shows the consumer loops, their groups, pending entries and the
 * dead-letter stream (the sample does not repeat those). Self-contained (no external assets); polls
 * `GET /stats` every second; every text from the server goes through `textContent`.
 */
export const ORDERS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nestjs-echo-stream sample: orders</title>
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
</style>
</head>
<body>
<header>
  <h1>Orders</h1>
  <span id="status" class="status"><span class="dot"></span><span id="status-text">connecting</span></span>
  <div class="actions">
    <button id="publish-one" type="button">Publish order</button>
    <button id="publish-many" type="button">Publish 20</button>
    <button id="publish-poison" type="button">Publish poison</button>
  </div>
</header>
<main>
  <p class="ops" id="ops">Consumer loops, their groups, pending entries and the dead-letter stream
    (redrive, delete): <a id="dashboard-link" href="/echo-stream">open the echo-stream dashboard</a>.</p>
  <div class="summary">
    <div class="tile"><div class="v" id="sum-charged">-</div><div class="k">orders charged</div></div>
    <div class="tile"><div class="v" id="sum-duplicates">-</div><div class="k">duplicates skipped</div></div>
    <div class="tile"><div class="v" id="sum-dead">-</div><div class="k">dead letters received</div></div>
    <div class="tile"><div class="v" id="sum-failure">-</div><div class="k">FAILURE_RATE</div></div>
  </div>

  <h2>Dead letters received <span class="sub">(by the sample's <code>@DeadLetter('orders')</code> handler, newest first)</span></h2>
  <table id="dead">
    <colgroup><col style="width:9%"><col style="width:11%"><col style="width:8%"><col style="width:14%">
      <col style="width:20%"><col style="width:9%"><col></colgroup>
    <thead><tr><th>When</th><th>Reason</th><th>Group</th><th>Entry</th><th>Id</th>
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
      tr.appendChild(el('td', '', d.group));
      tr.appendChild(el('td', '', d.entryId));
      tr.appendChild(el('td', '', d.id || '-'));
      tr.appendChild(el('td', '', String(d.attempts)));
      tr.appendChild(el('td', 'err', d.error || ''));
      tbody.appendChild(tr);
    });
  }

  function render(s) {
    document.getElementById('sum-charged').textContent = num(s.ledger.charged);
    document.getElementById('sum-duplicates').textContent = num(s.ledger.duplicates);
    document.getElementById('sum-dead').textContent = num(s.deadLetters.total);
    document.getElementById('sum-failure').textContent = String(s.failureRate);
    document.getElementById('dashboard-link').setAttribute('href', s.dashboard);
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
  function publish(poison) {
    var body = { sku: SKUS[Math.floor(Math.random() * SKUS.length)], qty: 1 + Math.floor(Math.random() * 5) };
    if (poison) body.poison = true;
    return fetch('/orders', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  document.getElementById('publish-one').onclick = function () { publish(false); };
  document.getElementById('publish-poison').onclick = function () { publish(true); };
  document.getElementById('publish-many').onclick = function () {
    for (var i = 0; i < 20; i++) publish(false);
  };

  tick();
})();
</script>
</body>
</html>
`;
