// The echo-stream dashboard page. Plain script, no dependencies, served with a strict CSP.
// Every value from the server (stream names, payloads, errors) is untrusted: it only ever
// reaches the page as text (textContent / text nodes), never as markup.
'use strict';

(function () {
  const REFRESH_MS = 1500;
  const PAGE = 20;
  const root = document.documentElement;
  const base = root.dataset.base || '';
  const api = base + '/api';
  let readOnly = root.dataset.readOnly !== 'false';

  /** What is shown: the selected stream and group, and the page cursor of each list. */
  const view = { stream: null, group: null, pendingAfter: null, deadAfter: null, tailAfter: null };
  const nextCursor = { pending: null, dead: null, tail: null };

  const $ = (selector) => document.querySelector(selector);

  /** An element with text children; `attrs` only sets class, data-* and title. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = value;
      else if (key.startsWith('data-') || key === 'title') node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function num(value) {
    return value === null || value === undefined ? '—' : Number(value).toLocaleString('en-US');
  }

  function rate(value) {
    return value === null || value === undefined ? '—' : Number(value).toFixed(1);
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return '—';
    if (ms < 1000) return ms + ' ms';
    const s = Math.floor(ms / 1000);
    if (s < 60) return (ms / 1000).toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' m ' + (s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' m';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }

  function entryTime(entryId) {
    const ms = Number(String(entryId).split('-')[0]);
    return Number.isFinite(ms) ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '';
  }

  function sparkline(series) {
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 120 24');
    svg.setAttribute('preserveAspectRatio', 'none');
    const all = series.tpsIn.concat(series.tpsOut);
    const max = Math.max(1, ...all);
    for (const [name, values] of [['in', series.tpsIn], ['out', series.tpsOut]]) {
      if (values.length < 2) continue;
      const step = 120 / (values.length - 1);
      const points = values.map((v, i) => (i * step).toFixed(1) + ',' + (23 - (v / max) * 22).toFixed(1));
      const line = document.createElementNS(ns, 'polyline');
      line.setAttribute('class', name);
      line.setAttribute('points', points.join(' '));
      svg.append(line);
    }
    const title = document.createElementNS(ns, 'title');
    title.textContent = 'in (grey) and out (blue) per second, last minute';
    svg.append(title);
    return svg;
  }

  async function getJson(path) {
    const res = await fetch(api + path, { credentials: 'same-origin', cache: 'no-store' });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.message || res.status + ' ' + res.statusText);
    return body;
  }

  async function postJson(path, body) {
    const res = await fetch(api + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(answer.message || res.status + ' ' + res.statusText);
    return answer;
  }

  function say(text, isError) {
    const box = $('#message');
    box.textContent = text;
    box.className = isError ? 'message error' : 'message';
    box.hidden = false;
  }

  function streamPath(stream) {
    return '/streams/' + encodeURIComponent(stream);
  }

  // ---- overview ------------------------------------------------------------------------------

  function renderOverview(data) {
    readOnly = data.readOnly;
    root.dataset.readOnly = String(readOnly);
    $('#mode').textContent = readOnly ? 'read-only' : 'read-write';
    const body = $('#overview tbody');
    const rows = [];
    for (const stream of data.streams) {
      if (stream.error || stream.groups.length === 0) {
        rows.push(
          el('tr', { class: 'group-row', 'data-stream': stream.stream },
            el('td', { 'data-field': 'stream' }, stream.stream),
            el('td', { class: 'muted' }, stream.error ? 'error: ' + stream.error : 'no groups'),
            el('td'), el('td'), el('td'), el('td'), el('td'), el('td'), el('td'), el('td'),
            el('td', { class: 'num', 'data-field': 'deadLetters' }, num(stream.deadLetters)),
            el('td', { class: 'num', 'data-field': 'length' }, num(stream.length)),
          ),
        );
        continue;
      }
      for (const g of stream.groups) {
        const key = stream.stream + '/' + g.group;
        const selected = view.stream === stream.stream && view.group === g.group;
        const consumers = g.consumers.map((c) => c.name + ' (' + c.pending + ')').join(', ');
        rows.push(
          el('tr', { class: 'group-row' + (selected ? ' selected' : ''), 'data-group': key, 'data-stream': stream.stream, 'data-group-name': g.group },
            el('td', { 'data-field': 'stream' }, stream.stream),
            el('td', { 'data-field': 'group' }, g.group),
            el('td', { 'data-field': 'state', class: g.state ? 'state-' + g.state : 'muted', title: g.handler || 'no handler of this app' }, g.state || 'external'),
            el('td', { 'data-field': 'consumers' }, consumers || '—'),
            el('td', { class: 'num', 'data-field': 'tpsIn' }, rate(g.tpsIn)),
            el('td', { class: 'num', 'data-field': 'tpsOut' }, rate(g.tpsOut)),
            el('td', { 'data-field': 'sparkline' }, sparkline(g.sparkline)),
            el('td', { class: 'num' + (g.lag > 0 ? ' hot' : ''), 'data-field': 'lag' }, num(g.lag)),
            el('td', { class: 'num', 'data-field': 'pending' }, num(g.pending)),
            el('td', { class: 'num', 'data-field': 'oldestPending' }, duration(g.oldestPendingMs)),
            el('td', { class: 'num' + (g.deadLetters > 0 ? ' hot' : ''), 'data-field': 'deadLetters' }, num(g.deadLetters)),
            el('td', { class: 'num', 'data-field': 'length' }, num(stream.length)),
          ),
        );
      }
    }
    body.replaceChildren(...rows);
    $('#overview-empty').hidden = data.streams.length > 0;
    if (view.stream === null && data.streams.length > 0) {
      const first = data.streams.find((s) => s.groups.length > 0) || data.streams[0];
      select(first.stream, first.groups.length > 0 ? first.groups[0].group : null);
    }
  }

  function select(stream, group) {
    const changed = view.stream !== stream || view.group !== group;
    view.stream = stream;
    view.group = group;
    if (changed) {
      view.pendingAfter = view.deadAfter = view.tailAfter = null;
      for (const row of document.querySelectorAll('#overview tbody tr')) {
        row.classList.toggle('selected', row.dataset.stream === stream && row.dataset.groupName === group);
      }
      $('#details').hidden = false;
      $('#details-stream').textContent = stream;
      $('#pending-group').textContent = group || '—';
      refreshDetails();
    }
  }

  // ---- details -------------------------------------------------------------------------------

  async function renderPending() {
    const body = $('#pending tbody');
    if (!view.group) {
      body.replaceChildren();
      $('#pending-total').textContent = '(the stream has no group)';
      return;
    }
    const query = '?count=' + PAGE + (view.pendingAfter ? '&after=' + view.pendingAfter : '');
    const data = await getJson(streamPath(view.stream) + '/groups/' + encodeURIComponent(view.group) + '/pending' + query);
    nextCursor.pending = data.next;
    $('#pending-total').textContent = '(' + num(data.pending) + ' in the PEL)';
    body.replaceChildren(
      ...data.entries.map((e) =>
        el('tr', { 'data-entry-id': e.entryId },
          el('td', {}, e.entryId),
          el('td', {}, e.consumer),
          el('td', { class: 'num' }, duration(e.idleMs)),
          el('td', { class: 'num' }, num(e.deliveries)),
          el('td', { class: 'payload' }, e.preview === null ? '(deleted from the stream)' : e.preview),
        ),
      ),
    );
  }

  async function renderDeadLetters() {
    const query = '?count=' + PAGE + (view.deadAfter ? '&after=' + view.deadAfter : '');
    const data = await getJson(streamPath(view.stream) + '/dead-letters' + query);
    nextCursor.dead = data.next;
    $('#redrive-all').disabled = data.entries.length === 0;
    $('#dead-letters tbody').replaceChildren(
      ...data.entries.map((d) => {
        const redrive = el('button', { class: 'redrive', 'data-entry-id': d.entryId }, 'Redrive');
        const remove = el('button', { class: 'delete', 'data-entry-id': d.entryId }, 'Delete');
        redrive.type = remove.type = 'button';
        return el('tr', { 'data-entry-id': d.entryId },
          el('td', {}, d.entryId),
          el('td', {}, d.group),
          el('td', { 'data-field': 'reason' }, d.reason),
          el('td', { 'data-field': 'error' }, d.error || ''),
          el('td', { class: 'num' }, num(d.attempts)),
          el('td', {}, d.at.replace('T', ' ').slice(0, 19)),
          el('td', { class: 'payload' }, d.preview),
          el('td', { class: 'mutate' }, redrive, ' ', remove),
        );
      }),
    );
  }

  async function renderTail() {
    const query = '?count=' + PAGE + (view.tailAfter ? '&after=' + view.tailAfter : '');
    const data = await getJson(streamPath(view.stream) + '/entries' + query);
    nextCursor.tail = data.next;
    $('#tail-length').textContent = '(' + num(data.length) + ' entries, newest first)';
    $('#tail tbody').replaceChildren(
      ...data.entries.map((e) =>
        el('tr', { 'data-entry-id': e.entryId },
          el('td', {}, e.entryId),
          el('td', {}, entryTime(e.entryId)),
          el('td', { class: 'payload' }, e.preview),
        ),
      ),
    );
  }

  let detailsBusy = false;
  async function refreshDetails() {
    if (view.stream === null || detailsBusy) return;
    detailsBusy = true;
    try {
      await Promise.all([renderPending(), renderDeadLetters(), renderTail()]);
    } catch (err) {
      say(String(err.message || err), true);
    } finally {
      detailsBusy = false;
    }
  }

  // ---- actions -------------------------------------------------------------------------------

  async function redrive(body, what) {
    try {
      const answer = await postJson(streamPath(view.stream) + '/dead-letters/redrive', body);
      say('Redrove ' + answer.redriven + ' dead letter(s) of ' + answer.stream + (what ? ' (' + what + ')' : ''));
    } catch (err) {
      say('Redrive failed: ' + (err.message || err), true);
    }
    await Promise.all([refreshOverview(), refreshDetails()]);
  }

  async function remove(entryId) {
    if (!window.confirm('Delete dead letter ' + entryId + '? It is gone for good.')) return;
    try {
      const answer = await postJson(streamPath(view.stream) + '/dead-letters/delete', { entryIds: [entryId] });
      say('Deleted ' + answer.deleted.length + ' dead letter(s) of ' + answer.stream);
    } catch (err) {
      say('Delete failed: ' + (err.message || err), true);
    }
    await Promise.all([refreshOverview(), refreshDetails()]);
  }

  function pager(panel, cursorKey, viewKey) {
    for (const button of document.querySelectorAll('#' + panel + ' .pager button')) {
      button.addEventListener('click', () => {
        view[viewKey] = button.dataset.page === 'first' ? null : nextCursor[cursorKey];
        refreshDetails();
      });
    }
  }

  $('#overview tbody').addEventListener('click', (event) => {
    const row = event.target.closest('tr');
    if (row && row.dataset.stream !== undefined) select(row.dataset.stream, row.dataset.groupName || null);
  });
  $('#dead-letters tbody').addEventListener('click', (event) => {
    const button = event.target.closest('button');
    if (!button || readOnly) return;
    if (button.classList.contains('redrive')) redrive({ entryIds: [button.dataset.entryId] }, button.dataset.entryId);
    if (button.classList.contains('delete')) remove(button.dataset.entryId);
  });
  $('#redrive-all').addEventListener('click', () => {
    if (!readOnly && window.confirm('Redrive every dead letter of ' + view.stream + '?')) redrive({}, 'all');
  });
  pager('pending', 'pending', 'pendingAfter');
  pager('dead-letters', 'dead', 'deadAfter');
  pager('tail', 'tail', 'tailAfter');

  // ---- refresh loop --------------------------------------------------------------------------

  let overviewBusy = false;
  async function refreshOverview() {
    if (overviewBusy) return;
    overviewBusy = true;
    const status = $('#status');
    try {
      const data = await getJson('/overview');
      renderOverview(data);
      status.textContent = 'live';
      status.className = 'status live';
      $('#updated').textContent = 'updated ' + new Date(data.at).toLocaleTimeString('en-GB');
    } catch (err) {
      status.textContent = 'error: ' + (err.message || err);
      status.className = 'status error';
    } finally {
      overviewBusy = false;
    }
  }

  async function tick() {
    await Promise.all([refreshOverview(), refreshDetails()]);
    setTimeout(tick, REFRESH_MS);
  }
  tick();
})();
