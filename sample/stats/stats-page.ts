/**
 * The live page served on `GET /`: self-contained (no external assets), polls `GET /stats` every
 * second and shows each loop's state, rates, totals and the group's live figures from Redis.
 * Every text from the server goes through `textContent` (never parsed as HTML).
 * Cells carry `data-loop="<stream>/<group>"` (row) and `data-field="<name>"` for tests.
 */
export const STATS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nestjs-echo-stream sample</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --muted: #6b7385; --line: #e3e6ec;
          --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --accent: #2f5fd0; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
         background: var(--bg); color: var(--ink); }
  header { display: flex; align-items: center; gap: 16px; padding: 14px 24px;
           background: var(--card); border-bottom: 1px solid var(--line); flex-wrap: wrap; }
  h1 { font-size: 18px; margin: 0; font-weight: 600; }
  h2 { font-size: 15px; margin: 24px 0 8px; font-weight: 600; }
  main { padding: 8px 24px 32px; }
  .status { font-size: 12px; color: var(--muted); }
  .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px;
         background: var(--muted); vertical-align: middle; }
  .live .dot { background: var(--ok); }
  .offline .dot { background: var(--bad); }
  .actions { margin-left: auto; display: flex; gap: 8px; }
  button { font: inherit; font-size: 13px; padding: 5px 11px; border-radius: 6px; cursor: pointer;
           border: 1px solid var(--line); background: var(--card); color: var(--ink); }
  button:hover { border-color: var(--accent); color: var(--accent); }
  table { width: 100%; border-collapse: collapse; background: var(--card);
          border: 1px solid var(--line); border-radius: 8px; overflow: hidden; }
  th, td { padding: 8px 10px; text-align: right; border-bottom: 1px solid var(--line);
           white-space: nowrap; font-variant-numeric: tabular-nums; }
  th { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted);
       background: #fafbfc; font-weight: 600; }
  th:first-child, td:first-child, th.l, td.l { text-align: left; }
  tr:last-child td { border-bottom: 0; }
  .loop-name { font-weight: 600; }
  .sub { font-size: 12px; color: var(--muted); }
  .state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
           font-weight: 600; background: #eef0f4; color: var(--muted); }
  .state.running { background: #dafbe1; color: var(--ok); }
  .state.degraded { background: #ffebe9; color: var(--bad); }
  .state.starting, .state.stopping { background: #fff8c5; color: var(--warn); }
  .err { color: var(--bad); font-size: 12px; white-space: normal; text-align: left; }
  .nonzero { color: var(--bad); font-weight: 600; }
  svg.spark { width: 120px; height: 28px; vertical-align: middle; }
  svg.spark polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
  .summary { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 16px; }
  .tile { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
          padding: 10px 14px; min-width: 140px; }
  .tile .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
  .tile .k { font-size: 12px; color: var(--muted); }
  .empty { color: var(--muted); text-align: left; }
  .reason { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
</style>
</head>
<body>
<header>
  <h1>nestjs-echo-stream sample</h1>
  <span id="status" class="status"><span class="dot"></span><span id="status-text">connecting</span></span>
  <div class="actions">
    <button id="publish-one" type="button">Publish order</button>
    <button id="publish-many" type="button">Publish 20</button>
    <button id="publish-poison" type="button">Publish poison</button>
  </div>
</header>
<main>
  <div class="summary">
    <div class="tile"><div class="v" id="sum-charged">-</div><div class="k">orders charged</div></div>
    <div class="tile"><div class="v" id="sum-duplicates">-</div><div class="k">duplicates skipped</div></div>
    <div class="tile"><div class="v" id="sum-dead">-</div><div class="k">dead letters received</div></div>
    <div class="tile"><div class="v" id="sum-failure">-</div><div class="k">FAILURE_RATE</div></div>
  </div>

  <h2>Consumer loops</h2>
  <table id="loops">
    <thead><tr>
      <th>Loop</th><th class="l">State</th><th>In/s</th><th>Out/s</th><th class="l">Out/s, last 60 s</th>
      <th>Read</th><th>Acked</th><th>Errors</th><th>Retrying</th><th>Retries</th><th>Dead-lettered</th>
      <th>Pending</th><th>Lag</th><th>Oldest pending</th><th>DLQ length</th>
    </tr></thead>
    <tbody><tr><td class="empty" colspan="15">waiting for /stats</td></tr></tbody>
  </table>

  <h2>Recent dead letters <span class="sub">(newest first; all of them are in the <code>orders:dlq</code> stream)</span></h2>
  <table id="dead">
    <thead><tr><th>When</th><th class="l">Reason</th><th class="l">Group</th><th class="l">Entry</th>
      <th class="l">Id</th><th>Deliveries</th><th class="l">Error</th></tr></thead>
    <tbody><tr><td class="empty" colspan="7">none yet</td></tr></tbody>
  </table>
</main>
<script>
(function () {
  'use strict';
  var FIELDS = ['state', 'tpsIn', 'tpsOut', 'spark', 'totalRead', 'totalAcked', 'totalErrors',
    'retrying', 'totalRetries', 'totalDlq', 'pending', 'lag', 'oldestPending', 'deadLetters'];
  var SHOWN_DEAD = 8;
  var rows = {};
  var history = {};
  var seq = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function num(n) { return n === null || n === undefined ? '-' : Number(n).toLocaleString('en-US'); }
  function rate(n) { return n === null || n === undefined ? '-' : Number(n).toFixed(1); }
  function age(ms) {
    if (ms === null || ms === undefined) return '-';
    if (ms < 1000) return ms + ' ms';
    if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
    return Math.round(ms / 60000) + ' min';
  }
  function setStatus(ok, text) {
    document.getElementById('status').className = 'status ' + (ok ? 'live' : 'offline');
    document.getElementById('status-text').textContent = text;
  }

  function spark(values) {
    var ns = 'http://www.w3.org/2000/svg';
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 120 28');
    svg.setAttribute('preserveAspectRatio', 'none');
    var max = Math.max.apply(null, values.concat([1]));
    var pts = values.map(function (v, i) {
      var x = 120 - ((values.length - 1 - i) * 120) / (60 - 1);
      return x.toFixed(1) + ',' + (26 - (v / max) * 24).toFixed(1);
    });
    var line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', pts.join(' '));
    svg.appendChild(line);
    return svg;
  }

  function rowFor(loop, tbody) {
    var key = loop.stream + '/' + loop.group;
    var row = rows[key];
    if (row) return row;
    var tr = el('tr');
    tr.setAttribute('data-loop', key);
    var first = el('td');
    first.appendChild(el('div', 'loop-name', key));
    first.appendChild(el('div', 'sub', loop.handler + ' \\u00b7 ' + loop.consumer));
    var err = el('div', 'err');
    err.setAttribute('data-field', 'lastError');
    first.appendChild(err);
    tr.appendChild(first);
    var cells = {};
    FIELDS.forEach(function (f) {
      var td = el('td', f === 'state' || f === 'spark' ? 'l' : '');
      td.setAttribute('data-field', f);
      tr.appendChild(td);
      cells[f] = td;
    });
    cells.lastError = err;
    tbody.appendChild(tr);
    rows[key] = row = { tr: tr, cells: cells };
    return row;
  }

  function renderLoops(loops) {
    var tbody = document.querySelector('#loops tbody');
    if (loops.length === 0) {
      tbody.textContent = '';
      rows = {};
      var tr = el('tr');
      var td = el('td', 'empty', 'no loops running');
      td.colSpan = 13;
      tr.appendChild(td);
      tbody.appendChild(tr);
      return;
    }
    var empty = tbody.querySelector('td.empty');
    if (empty) tbody.textContent = '';
    var live = {};
    loops.forEach(function (loop) {
      var key = loop.stream + '/' + loop.group;
      live[key] = true;
      var c = rowFor(loop, tbody).cells;
      var h = (history[key] = (history[key] || []).concat([loop.tpsOut]).slice(-60));
      var insp = loop.inspection;
      c.state.textContent = '';
      c.state.appendChild(el('span', 'state ' + loop.state, loop.state));
      c.tpsIn.textContent = rate(loop.tpsIn);
      c.tpsOut.textContent = rate(loop.tpsOut);
      c.spark.textContent = '';
      c.spark.appendChild(spark(h));
      c.totalRead.textContent = num(loop.totalRead);
      c.totalAcked.textContent = num(loop.totalAcked);
      c.totalErrors.textContent = num(loop.totalErrors);
      c.totalErrors.className = loop.totalErrors > 0 ? 'nonzero' : '';
      c.retrying.textContent = num(loop.retrying);
      c.retrying.className = loop.retrying > 0 ? 'nonzero' : '';
      c.totalRetries.textContent = num(loop.totalRetries);
      c.totalDlq.textContent = num(loop.totalDlq);
      c.pending.textContent = insp ? num(insp.pending) : '?';
      c.lag.textContent = insp ? num(insp.lag) : '?';
      c.oldestPending.textContent = insp ? age(insp.oldestPendingMs) : '?';
      c.deadLetters.textContent = insp ? num(insp.deadLetters) : '?';
      var lastError = loop.lastError || loop.inspectError || '';
      c.lastError.textContent = lastError ? 'last error: ' + lastError : '';
    });
    Object.keys(rows).forEach(function (key) {
      if (!live[key]) { rows[key].tr.remove(); delete rows[key]; delete history[key]; }
    });
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
      tr.appendChild(el('td', 'l reason', d.reason));
      tr.appendChild(el('td', 'l', d.group));
      tr.appendChild(el('td', 'l', d.entryId));
      tr.appendChild(el('td', 'l', d.id || '-'));
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
    renderLoops(s.loops);
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
