// The echo-stream dashboard page. Plain script, no dependencies, served with a strict CSP.
// Every value from the server (stream names, payloads, errors) is untrusted: it only ever
// reaches the page as text (textContent / text nodes), never as markup, and characters that
// would be invisible (bidirectional controls, zero-width marks) are shown as `\u202E` escapes.
'use strict';

(function (scope) {
  // ---- pure helpers (no DOM; the unit tests load them through node:vm) -----------------------

  /**
   * Characters that show nothing or reorder what follows: every format character (Unicode
   * category Cf: U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+2069, U+061C, U+FEFF,
   * U+00AD, the tag characters U+E0000-U+E007F, ...) and the line/paragraph separators. A stream
   * named `rtl\u202Egnp.exe` would otherwise read as `rtlexe.png`.
   */
  const INVISIBLE = /[\p{Cf}\u2028\u2029]/gu;

  /** `\u202E` (or `\u{E0041}` beyond the BMP) for one character. */
  function escapeChar(char) {
    const code = char.codePointAt(0);
    const hex = code.toString(16).toUpperCase();
    return code > 0xffff ? '\\u{' + hex + '}' : '\\u' + hex.padStart(4, '0');
  }

  /** `text` with every invisible character replaced by its escape (for titles and dialogs). */
  function showInvisible(text) {
    return String(text).replace(INVISIBLE, escapeChar);
  }

  /**
   * `text` cut into pieces, plain and escaped, in order: the page draws the escaped ones marked,
   * so `\u202E` in a name is told apart from those six characters typed by someone.
   */
  function textPieces(value) {
    const text = String(value);
    const pieces = [];
    let last = 0;
    for (const match of text.matchAll(INVISIBLE)) {
      if (match.index > last) pieces.push({ text: text.slice(last, match.index), escaped: false });
      pieces.push({ text: escapeChar(match[0]), escaped: true, code: match[0].codePointAt(0) });
      last = match.index + match[0].length;
    }
    if (last < text.length) pieces.push({ text: text.slice(last), escaped: false });
    return pieces;
  }

  /**
   * What each list of the details depends on, as read from one overview: a list is fetched again
   * only when its key changes (or the selection or page does). `null` keys mean "cannot tell"
   * (the stream is missing from the overview or could not be read).
   * - PEL: the group's pending count, the last id delivered to it, each consumer's pending count
   *   (a delivery, an ack, a claim to another consumer). Idle times are counted on by the page.
   * - dead letters: the stream's total and each group's count.
   * - tail: the stream's length and its entries-added counter (Redis >= 7; a capped stream
   *   keeps its length while entries come and go).
   */
  function listKeys(stream, groupName) {
    if (!stream || stream.error) return { pending: null, dead: null, tail: null };
    const group = stream.groups.find((g) => g.group === groupName);
    return {
      pending: group
        ? JSON.stringify([
            group.pending,
            group.lastDeliveredId === undefined ? null : group.lastDeliveredId,
            group.consumers.map((c) => [c.name, c.pending]),
          ])
        : JSON.stringify(['no group', groupName]),
      dead: JSON.stringify([stream.deadLetters, stream.groups.map((g) => [g.group, g.deadLetters])]),
      tail: JSON.stringify([stream.length, stream.entriesAdded === undefined ? null : stream.entriesAdded]),
    };
  }

  /**
   * The lists to fetch: those never fetched for the current selection and page (`held` null,
   * or the last fetch failed) and those whose key in `current` differs from the one they were
   * fetched at. A key the page cannot tell (`null`) does not make a held list stale.
   */
  function listsToFetch(held, current) {
    return ['pending', 'dead', 'tail'].filter(
      (list) => held[list] === null || (current[list] !== null && held[list] !== current[list]),
    );
  }

  if (typeof document === 'undefined') {
    scope.echoStreamPage = { showInvisible, textPieces, listKeys, listsToFetch };
    return;
  }

  // ---- the page ------------------------------------------------------------------------------

  const REFRESH_MS = 1500;
  const PAGE = 20;
  const LISTS = ['pending', 'dead', 'tail'];
  const root = document.documentElement;
  const base = root.dataset.base || '';
  const api = base + '/api';
  let readOnly = root.dataset.readOnly !== 'false';

  /** What is shown: the selected stream and group, and the page cursor of each list. */
  const view = { stream: null, group: null, after: { pending: null, dead: null, tail: null } };
  const nextCursor = { pending: null, dead: null, tail: null };
  /** The key (listKeys) each shown list was fetched at; null: fetch it on the next refresh. */
  const held = { pending: null, dead: null, tail: null };
  /** The last overview read, for the keys of the lists. */
  let overview = null;
  /** Bumped by every change of selection or page: answers to older requests are dropped. */
  let generation = 0;

  const $ = (selector) => document.querySelector(selector);

  /** Appends `value` as text, its invisible characters as marked escapes. */
  function appendText(node, value) {
    for (const piece of textPieces(String(value))) {
      if (!piece.escaped) {
        node.append(document.createTextNode(piece.text));
        continue;
      }
      const mark = document.createElement('span');
      mark.className = 'invisible';
      mark.title = 'invisible character U+' + piece.code.toString(16).toUpperCase().padStart(4, '0');
      mark.textContent = piece.text;
      node.append(mark);
    }
  }

  /** Replaces the text of the element `selector` (escaping as appendText). */
  function setText(selector, value) {
    const node = typeof selector === 'string' ? $(selector) : selector;
    node.replaceChildren();
    appendText(node, value);
  }

  /** An element with text children; `attrs` only sets class, data-*, title and colspan. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = value;
      else if (key === 'title') node.setAttribute(key, showInvisible(value));
      else if (key.startsWith('data-') || key === 'colspan') node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null) continue;
      if (child instanceof Node) node.append(child);
      else appendText(node, child);
    }
    return node;
  }

  function num(value) {
    return value === null || value === undefined ? '—' : Number(value).toLocaleString('en-US');
  }

  /**
   * A dead-letter count; `+` when the server counted only the newest letters of a very long
   * dead-letter stream (`deadLettersExact: false`).
   */
  function letterCount(count, stream) {
    return num(count) + (stream.deadLettersExact === false ? '+' : '');
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
    setText(box, text);
    box.className = isError ? 'message error' : 'message';
    box.hidden = false;
  }

  function streamPath(stream) {
    return '/streams/' + encodeURIComponent(stream);
  }

  // ---- overview ------------------------------------------------------------------------------

  /** The stream's own row: its name, its groups, its dead letters in total and its length. */
  function streamRow(stream) {
    const groups = stream.groups.length;
    const summary = stream.error
      ? 'error: ' + stream.error
      : groups === 0 ? 'no groups' : groups + (groups === 1 ? ' group' : ' groups');
    const selected = view.stream === stream.stream;
    return el('tr', { class: 'stream-row' + (selected ? ' current' : ''), 'data-stream': stream.stream },
      el('td', { 'data-field': 'stream' }, stream.stream),
      el('td', { class: 'muted', colspan: 11, 'data-field': 'summary' }, summary),
      el('td', { class: 'num' + (stream.deadLetters > 0 ? ' hot' : ''), 'data-field': 'deadLetters', title: 'dead letters of all groups' }, letterCount(stream.deadLetters, stream)),
      el('td', { class: 'num', 'data-field': 'length' }, num(stream.length)),
    );
  }

  function groupRow(stream, g) {
    const key = stream.stream + '/' + g.group;
    const selected = view.stream === stream.stream && view.group === g.group;
    // a partitioned stream: each owner with the partitions it holds
    const consumers = g.partitions
      ? g.consumers.map((c) => c.name + ' [' + g.partitions.filter((p) => p.owner === c.name).map((p) => p.partition).join(',') + ']').join(', ')
      : g.consumers.map((c) => c.name + ' (' + c.pending + ')').join(', ');
    return el('tr', { class: 'group-row' + (selected ? ' selected' : ''), 'data-group': key, 'data-stream': stream.stream, 'data-group-name': g.group },
      el('td', { class: 'indent' }),
      el('td', { 'data-field': 'group' }, g.group),
      el('td', { 'data-field': 'state', class: g.state ? 'state-' + g.state : 'muted', title: g.handler || 'no handler of this app' }, stateText(g)),
      el('td', { 'data-field': 'consumers' }, consumers || '—'),
      el('td', { class: 'num', 'data-field': 'tpsIn' }, rate(g.tpsIn)),
      el('td', { class: 'num', 'data-field': 'tpsOut' }, rate(g.tpsOut)),
      el('td', { 'data-field': 'sparkline' }, sparkline(g.sparkline)),
      el('td', { class: 'num' + (g.lag > 0 ? ' hot' : ''), 'data-field': 'lag' }, num(g.lag)),
      el('td', { class: 'num', 'data-field': 'pending' }, num(g.pending)),
      el('td', { class: 'num', 'data-field': 'oldestPending' }, duration(g.oldestPendingMs)),
      skippedCell(g),
      el('td', { class: 'num' + (g.totalFenced > 0 ? ' hot' : ''), 'data-field': 'fenced', title: 'exactlyOnce commits refused since the loop started, nothing written: the entry had become another consumer\'s' }, num(g.totalFenced)),
      el('td', { class: 'num' + (g.deadLetters > 0 ? ' hot' : ''), 'data-field': 'deadLetters', title: 'dead letters of this group' }, letterCount(g.deadLetters, stream)),
      el('td', { class: 'mutate' }, pauseButton(g)),
    );
  }

  /**
   * Entries this app's loop acked without calling its handler: duplicates (`dedup`) / stale
   * replays (`newerWins`); a dash for a group the app runs no loop of.
   */
  function skippedCell(g) {
    return el('td', { class: 'num', 'data-field': 'skipped', title: 'acked without a handler call since the loop started: duplicates (dedup) / stale replays (newerWins)' },
      el('span', { 'data-field': 'duplicates' }, num(g.totalDuplicates)),
      ' / ',
      el('span', { 'data-field': 'stale' }, num(g.totalStale)),
    );
  }

  /** The loop's state; a paused group this app runs no loop of (or whose loop has not seen it yet) says so too. */
  function stateText(g) {
    const state = g.state || 'external';
    return g.pausedSince && g.state !== 'paused' ? state + ' (paused)' : state;
  }

  /** Pause or Resume, for every process of the group (shown only with readOnly: false). */
  function pauseButton(g) {
    const paused = g.pausedSince !== null && g.pausedSince !== undefined;
    const button = el('button', { class: 'pause-toggle', 'data-action': paused ? 'resume' : 'pause', title: paused ? 'paused since ' + g.pausedSince : 'stop every process of this group from starting entries' }, paused ? 'Resume' : 'Pause');
    button.type = 'button';
    return button;
  }

  function renderOverview(data) {
    overview = data;
    readOnly = data.readOnly;
    root.dataset.readOnly = String(readOnly);
    $('#mode').textContent = readOnly ? 'read-only' : 'read-write';
    const rows = [];
    for (const stream of data.streams) {
      rows.push(streamRow(stream));
      for (const g of stream.groups) rows.push(groupRow(stream, g));
    }
    $('#overview tbody').replaceChildren(...rows);
    $('#overview-empty').hidden = data.streams.length > 0;
    const shown = data.streams.find((s) => s.stream === view.stream);
    if (shown) setText('#dead-total', '(' + letterCount(shown.deadLetters, shown) + ' in total)');
    if (view.stream === null && data.streams.length > 0) {
      const first = data.streams.find((s) => s.groups.length > 0) || data.streams[0];
      select(first.stream, first.groups.length > 0 ? first.groups[0].group : null);
    }
  }

  /**
   * Shows `stream` (and `group`'s PEL); a new selection fetches every list from its first page,
   * the current one again reloads the lists as they are paged (a reload by hand).
   */
  function select(stream, group) {
    if (view.stream === stream && view.group === group) return refreshDetails(true);
    const sameStream = view.stream === stream;
    view.stream = stream;
    view.group = group;
    generation++;
    view.after.pending = held.pending = null;
    if (!sameStream) {
      view.after.dead = view.after.tail = held.dead = held.tail = null;
      // what the old stream showed must not stand for the new one while its lists load
      for (const id of ['#dead-letters', '#tail']) $(id + ' tbody').replaceChildren();
    }
    $('#pending tbody').replaceChildren();
    for (const row of document.querySelectorAll('#overview tbody tr')) {
      row.classList.toggle('selected', row.dataset.stream === stream && row.dataset.groupName === group);
      row.classList.toggle('current', row.classList.contains('stream-row') && row.dataset.stream === stream);
    }
    $('#details').hidden = false;
    setText('#details-stream', stream);
    setText('#pending-group', group === null ? '—' : group);
    const shown = overview && overview.streams.find((s) => s.stream === stream);
    setText('#dead-total', shown ? '(' + letterCount(shown.deadLetters, shown) + ' in total)' : '');
    refreshDetails();
  }

  // ---- details -------------------------------------------------------------------------------

  /**
   * A row's entry id; on a partitioned stream (its partitions' lists merged) with the partition
   * the entry is of, as two partitions may hold the same id.
   */
  function entryCell(e) {
    if (e.partition === undefined || e.partition === null) return el('td', { class: 'id' }, e.entryId);
    return el('td', { class: 'id' }, e.entryId, ' ',
      el('span', { class: 'partition', 'data-field': 'partition', title: 'partition ' + e.partition }, 'p' + e.partition));
  }

  /** When the shown PEL page was read: its idle times are counted on from there. */
  let pendingReadAt = 0;

  async function loadPending() {
    if (view.group === null) {
      nextCursor.pending = null;
      return () => {
        $('#pending tbody').replaceChildren();
        $('#pending-total').textContent = '(the stream has no group)';
      };
    }
    const after = view.after.pending;
    const query = '?count=' + PAGE + (after ? '&after=' + encodeURIComponent(after) : '');
    const data = await getJson(streamPath(view.stream) + '/groups/' + encodeURIComponent(view.group) + '/pending' + query);
    return () => {
      nextCursor.pending = data.next;
      pendingReadAt = Date.now();
      $('#pending-total').textContent = '(' + num(data.pending) + ' in the PEL)';
      $('#pending tbody').replaceChildren(
        ...data.entries.map((e) =>
          el('tr', { 'data-entry-id': e.entryId, 'data-partition': e.partition },
            entryCell(e),
            el('td', {}, e.consumer),
            el('td', { class: 'num', 'data-field': 'idle', 'data-idle-ms': e.idleMs }, duration(e.idleMs)),
            el('td', { class: 'num' }, num(e.deliveries)),
            el('td', { class: 'payload' }, e.preview === null ? '(deleted from the stream)' : e.preview),
          ),
        ),
      );
    };
  }

  /** The idle times of the shown PEL page, counted on since it was read (no request). */
  function ageIdleTimes() {
    const elapsed = Date.now() - pendingReadAt;
    for (const cell of document.querySelectorAll('#pending td[data-field="idle"]')) {
      cell.textContent = duration(Number(cell.dataset.idleMs) + elapsed);
    }
  }

  async function loadDeadLetters() {
    const after = view.after.dead;
    const query = '?count=' + PAGE + (after ? '&after=' + encodeURIComponent(after) : '');
    const data = await getJson(streamPath(view.stream) + '/dead-letters' + query);
    return () => {
      nextCursor.dead = data.next;
      $('#redrive-all').disabled = data.entries.length === 0;
      $('#dead-letters tbody').replaceChildren(
        ...data.entries.map((d) => {
          const redrive = el('button', { class: 'redrive', 'data-entry-id': d.entryId }, 'Redrive');
          const remove = el('button', { class: 'delete', 'data-entry-id': d.entryId }, 'Delete');
          redrive.type = remove.type = 'button';
          return el('tr', { 'data-entry-id': d.entryId },
            el('td', { class: 'id' }, d.entryId),
            // a partitioned stream's letter: the partition it came from (its key is in the payload)
            el('td', { 'data-field': 'group' }, d.partition === null || d.partition === undefined ? d.group : d.group + ' \u00b7 p' + d.partition),
            el('td', { 'data-field': 'reason' }, d.reason),
            el('td', { 'data-field': 'error' }, d.error || ''),
            el('td', { class: 'num' }, num(d.attempts)),
            el('td', {}, String(d.at).replace('T', ' ').slice(0, 19)),
            el('td', { class: 'payload' }, d.preview),
            el('td', { class: 'mutate' }, redrive, ' ', remove),
          );
        }),
      );
    };
  }

  async function loadTail() {
    const after = view.after.tail;
    const query = '?count=' + PAGE + (after ? '&after=' + encodeURIComponent(after) : '');
    const data = await getJson(streamPath(view.stream) + '/entries' + query);
    return () => {
      nextCursor.tail = data.next;
      $('#tail-length').textContent = '(' + num(data.length) + ' entries, newest first)';
      $('#tail tbody').replaceChildren(
        ...data.entries.map((e) =>
          el('tr', { 'data-entry-id': e.entryId, 'data-partition': e.partition },
            entryCell(e),
            el('td', {}, entryTime(e.entryId)),
            el('td', { class: 'payload' }, e.preview),
          ),
        ),
      );
    };
  }

  const LOADERS = { pending: loadPending, dead: loadDeadLetters, tail: loadTail };

  /**
   * Fetches the lists whose key moved since they were fetched (listsToFetch), or all of them
   * when `force`; lists nothing changed are kept as they are. One refresh at a time.
   */
  let detailsQueue = Promise.resolve();
  function refreshDetails(force) {
    // the chain never rejects, so one failed refresh cannot stop the next ones
    detailsQueue = detailsQueue
      .then(() => fetchLists(force === true))
      .catch((err) => say(String((err && err.message) || err), true));
    return detailsQueue;
  }

  async function fetchLists(force) {
    ageIdleTimes();
    if (view.stream === null) return;
    const shown = overview && overview.streams.find((s) => s.stream === view.stream);
    const keys = listKeys(shown, view.group);
    const due = force ? LISTS : listsToFetch(held, keys);
    if (due.length === 0) return;
    const asked = generation;
    const results = await Promise.allSettled(due.map((list) => LOADERS[list]()));
    if (asked !== generation) return; // the selection or page moved meanwhile: a newer fetch follows
    let failure = null;
    results.forEach((result, i) => {
      const list = due[i];
      if (result.status === 'fulfilled') {
        result.value();
        held[list] = keys[list] === null ? 'unknown' : keys[list];
      } else {
        held[list] = null; // try again on the next refresh
        failure = failure || result.reason;
      }
    });
    if (failure) say(String(failure.message || failure), true);
  }

  // ---- actions -------------------------------------------------------------------------------

  /** After a change: the overview first, so the lists are fetched at the keys that follow it. */
  async function reloadAll() {
    await refreshOverview();
    await refreshDetails(true);
  }

  async function redrive(body, what) {
    try {
      const answer = await postJson(streamPath(view.stream) + '/dead-letters/redrive', body);
      say('Redrove ' + answer.redriven + ' dead letter(s) of ' + answer.stream + (what ? ' (' + what + ')' : ''));
    } catch (err) {
      say('Redrive failed: ' + (err.message || err), true);
    }
    await reloadAll();
  }

  async function remove(entryId) {
    if (!window.confirm('Delete dead letter ' + entryId + '? It is gone for good.')) return;
    try {
      const answer = await postJson(streamPath(view.stream) + '/dead-letters/delete', { entryIds: [entryId] });
      say('Deleted ' + answer.deleted.length + ' dead letter(s) of ' + answer.stream);
    } catch (err) {
      say('Delete failed: ' + (err.message || err), true);
    }
    await reloadAll();
  }

  function pager(panel, list) {
    for (const button of document.querySelectorAll('#' + panel + ' .pager button')) {
      button.addEventListener('click', () => {
        view.after[list] = button.dataset.page === 'first' ? null : nextCursor[list];
        held[list] = null;
        generation++;
        refreshDetails();
      });
    }
  }

  async function setPaused(stream, group, action) {
    try {
      await postJson(streamPath(stream) + '/groups/' + encodeURIComponent(group) + '/' + action, {});
      say((action === 'pause' ? 'Paused' : 'Resumed') + ' group ' + group + ' of ' + stream + ' (every process, within its claim interval)');
    } catch (err) {
      say((action === 'pause' ? 'Pause' : 'Resume') + ' failed: ' + (err.message || err), true);
    }
    await reloadAll();
  }

  $('#overview tbody').addEventListener('click', (event) => {
    const toggle = event.target.closest('button.pause-toggle');
    if (toggle) {
      const row = toggle.closest('tr');
      if (readOnly || !row) return;
      const { stream, groupName } = row.dataset;
      const action = toggle.dataset.action;
      const question = action === 'pause'
        ? 'Pause group ' + showInvisible(groupName) + ' of ' + showInvisible(stream) + '? Every process stops starting its entries until it is resumed.'
        : 'Resume group ' + showInvisible(groupName) + ' of ' + showInvisible(stream) + '?';
      if (window.confirm(question)) setPaused(stream, groupName, action);
      return;
    }
    const row = event.target.closest('tr');
    if (!row || row.dataset.stream === undefined) return;
    if (row.dataset.groupName !== undefined) return select(row.dataset.stream, row.dataset.groupName);
    // a stream's own row: keep its selected group, else its first
    if (row.dataset.stream === view.stream) return refreshDetails(true);
    const stream = overview && overview.streams.find((s) => s.stream === row.dataset.stream);
    select(row.dataset.stream, stream && stream.groups.length > 0 ? stream.groups[0].group : null);
  });
  $('#dead-letters tbody').addEventListener('click', (event) => {
    const button = event.target.closest('button');
    if (!button || readOnly) return;
    const entryId = button.dataset.entryId;
    if (button.classList.contains('redrive')) {
      const question = 'Redrive dead letter ' + entryId + ' of ' + showInvisible(view.stream) + '? Its entry is added to the stream again.';
      if (window.confirm(question)) redrive({ entryIds: [entryId] }, entryId);
    }
    if (button.classList.contains('delete')) remove(entryId);
  });
  $('#redrive-all').addEventListener('click', () => {
    if (!readOnly && window.confirm('Redrive every dead letter of ' + showInvisible(view.stream) + '?')) redrive({}, 'all');
  });
  pager('pending', 'pending');
  pager('dead-letters', 'dead');
  pager('tail', 'tail');

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
      setText(status, 'error: ' + (err.message || err));
      status.className = 'status error';
    } finally {
      overviewBusy = false;
    }
  }

  /** Every REFRESH_MS: the overview, then only the lists it shows changed. */
  async function tick() {
    try {
      await refreshOverview();
      await refreshDetails();
    } finally {
      setTimeout(tick, REFRESH_MS);
    }
  }
  tick();
})(globalThis);
