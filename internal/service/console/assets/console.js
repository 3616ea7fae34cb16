// The operations console: sign-in, then pages drawn from the public API with the user's own
// token (docs/console.md). Hash routes: #/operations (the list, with its filters in the
// query), #/operations/op_… (one operation), #/operator (operators' queue and counts).

import {
  ApiError, call, claims, clearToken, cognitoSignOut, finishCognitoSignIn, retryAfter, setToken,
  startCognitoSignIn, token, whenUnauthenticated,
} from './api.js';
import {
  STATES, badge, duration, fromLocalInput, h, json, progressBar, replace, stateLabel, time, toLocalInput, uid,
} from './dom.js';
import * as timeline from './timeline.js';
import { signalForm } from './schemaform.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const whoName = document.getElementById('who-name');
const operatorLink = document.getElementById('nav-operator');

const app = { config: { signIn: 'token' }, operator: false, types: null };

// One page at a time: leaving a page aborts its requests and stops its polling.
let page = { abort: new AbortController(), timers: new Set() };

function newPage() {
  page.abort.abort();
  for (const t of page.timers) clearTimeout(t);
  page = { abort: new AbortController(), timers: new Set() };
  return page;
}

function later(p, fn, ms) {
  const t = setTimeout(() => {
    p.timers.delete(t);
    if (!p.abort.signal.aborted) fn();
  }, ms);
  p.timers.add(t);
  return t;
}

function stop(p, t) {
  clearTimeout(t);
  p.timers.delete(t);
}

// get calls the API on behalf of the current page: its answer is dropped once the page is left.
function api(p, method, path, opts = {}) {
  return call(method, path, { ...opts, signal: p.abort.signal });
}

function aborted(e) {
  return e && e.name === 'AbortError';
}

// show puts a page in <main>, titles the document and moves focus to its heading, so
// keyboard and screen-reader users start at the top of the new page.
function show(title, ...children) {
  document.title = `${title} · longrun`;
  replace(main, ...children);
  const h1 = main.querySelector('h1');
  if (h1) {
    h1.tabIndex = -1;
    h1.focus({ preventScroll: false });
  }
}

// problemBox shows a refused or failed call readably: title, detail, field errors, and
// longrun's own request id for a report.
function problemBox(err, lead) {
  if (!(err instanceof ApiError)) {
    return h('div', { className: 'problem', role: 'alert' }, h('p', { className: 'problem-title' }, lead || 'Something went wrong.'), h('p', {}, String(err && err.message)));
  }
  return h('div', { className: 'problem', role: 'alert' },
    h('p', { className: 'problem-title' }, lead ? `${lead} ` : '', err.title, err.status ? ` (${err.status}${err.code ? `, ${err.code}` : ''})` : ''),
    err.detail ? h('p', {}, err.detail) : null,
    err.errors.length ? h('ul', { className: 'field-errors' }, err.errors.map((fe) => h('li', {}, h('code', {}, fe.pointer || '/'), ' ', fe.detail))) : null,
    err.requestId ? h('p', { className: 'hint' }, 'Request id: ', h('code', {}, err.requestId)) : null);
}

function note(text, kind = 'info') {
  return h('p', { className: `note note-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

// ---- Sign-in -------------------------------------------------------------------------

function signedOutChrome() {
  nav.hidden = true;
  who.hidden = true;
  operatorLink.hidden = true;
}

function showSignIn(message, kind = 'error') {
  newPage();
  signedOutChrome();
  const msg = message ? note(message, kind) : null;
  if (app.config.signIn === 'cognito') {
    show('Sign in',
      h('section', { className: 'signin card' },
        h('h1', {}, 'Sign in'),
        msg,
        h('p', {}, 'The console shows your operations through the longrun API, as you. Sign in with your account.'),
        h('button', { type: 'button', className: 'primary', onclick: () => startCognitoSignIn(app.config.cognito) }, 'Sign in')));
    return;
  }
  const id = uid('token');
  const form = h('form', { className: 'signin card', autocomplete: 'off' },
    h('h1', {}, 'Sign in'),
    msg,
    h('p', {}, 'Paste a bearer token the API accepts. It is kept in this tab only, until you sign out or close the tab.'),
    h('div', { className: 'field' },
      h('label', { for: id }, 'Bearer token'),
      h('input', { type: 'password', id, name: 'token', required: true, autocomplete: 'off', spellcheck: 'false' })),
    h('p', { className: 'hint' }, 'On the local stack (make run): ', h('code', {}, 'alice-dev-token'), ' and ', h('code', {}, 'bob-dev-token'),
      ' (tenants acme and globex), ', h('code', {}, 'ops-dev-token'), ' (an operator).'),
    h('div', { className: 'buttons' }, h('button', { type: 'submit', className: 'primary' }, 'Sign in')),
    h('div', { className: 'form-result', 'aria-live': 'polite' }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const value = form.elements.namedItem('token').value.trim();
    if (!value) return;
    setToken(value);
    const out = form.querySelector('.form-result');
    try {
      await call('GET', '/operations', { query: { limit: 1 } });
      await signedIn();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return; // whenUnauthenticated asked again
      clearToken();
      replace(out, problemBox(e, 'Could not sign in.'));
    }
  });
  show('Sign in', form);
}

function signOut() {
  clearToken();
  app.operator = false;
  if (app.config.signIn === 'cognito') {
    cognitoSignOut(app.config.cognito);
    return;
  }
  showSignIn('You are signed out.', 'info');
}

// signedIn shows who is signed in, finds out whether they are an operator (GET /v1/stats
// answers operators only) and shows the page the address asks for.
async function signedIn() {
  const c = claims(token());
  const name = c ? (c.email || c['cognito:username'] || c.sub || 'signed in') : 'signed in with a token';
  const tenant = c && c['custom:tenant'] ? ` (${c['custom:tenant']})` : '';
  app.operator = false;
  try {
    await call('GET', '/stats');
    app.operator = true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;
  }
  whoName.textContent = `${name}${tenant}${app.operator ? ' · operator' : ''}`;
  nav.hidden = false;
  who.hidden = false;
  operatorLink.hidden = !app.operator;
  route();
}

// ---- Routing ---------------------------------------------------------------------------

function route() {
  if (!token()) {
    showSignIn();
    return;
  }
  const hash = location.hash || '#/operations';
  if (!hash.startsWith('#/')) return; // an in-page anchor (the skip link)
  const [path, qs] = hash.slice(1).split('?');
  const q = new URLSearchParams(qs || '');
  let section = '';
  let m;
  if (path === '/' || path === '/operations') {
    section = 'operations';
    listPage(q);
  } else if ((m = path.match(/^\/operations\/([^/]+)$/))) {
    section = 'operations';
    operationPage(decodeURIComponent(m[1]));
  } else if (path === '/operator') {
    section = 'operator';
    operatorPage();
  } else {
    newPage();
    show('Not found', h('h1', {}, 'No such page'), h('p', {}, h('a', { href: '#/operations' }, 'Go to the operations')));
  }
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

async function operationTypes() {
  if (!app.types) {
    const r = await call('GET', '/operation-types');
    app.types = (r.data && r.data.items) || [];
  }
  return app.types;
}

// ---- Operations ------------------------------------------------------------------------

const FILTERS = ['state', 'type', 'target', 'createdAfter', 'createdBefore'];
const OP_ID = /^op_[0-9A-Za-z]{26}$/;

function listPage(q) {
  const p = newPage();
  const filters = Object.fromEntries(FILTERS.map((k) => [k, q.get(k) || '']));
  const ids = Object.fromEntries([...FILTERS, 'q'].map((k) => [k, uid(`f-${k}`)]));

  const search = h('form', { className: 'search', role: 'search' },
    h('label', { for: ids.q }, 'Find an operation by id, or operations by target'),
    h('div', { className: 'inline' },
      h('input', { type: 'search', id: ids.q, name: 'q', placeholder: 'op_… or a target such as demo:build-42', autocomplete: 'off', spellcheck: 'false' }),
      h('button', { type: 'submit' }, 'Search')));
  search.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = search.elements.namedItem('q').value.trim();
    if (!v) return;
    if (OP_ID.test(v)) go(`#/operations/op_${v.slice(3).toUpperCase()}`);
    else go(`#/operations?${new URLSearchParams({ ...clean(filters), target: v })}`);
  });

  const typeSelect = h('select', { id: ids.type, name: 'type' }, h('option', { value: '' }, 'Any type'),
    filters.type ? h('option', { value: filters.type, selected: true }, filters.type) : null);
  const form = h('form', { className: 'filters', 'aria-label': 'Filters' },
    h('div', { className: 'field' }, h('label', { for: ids.state }, 'State'),
      h('select', { id: ids.state, name: 'state' }, h('option', { value: '' }, 'Any state'),
        STATES.map((s) => h('option', { value: s, selected: s === filters.state }, stateLabel(s))))),
    h('div', { className: 'field' }, h('label', { for: ids.type }, 'Type'), typeSelect),
    h('div', { className: 'field' }, h('label', { for: ids.target }, 'Target starts with'),
      h('input', { type: 'text', id: ids.target, name: 'target', value: filters.target, autocomplete: 'off', spellcheck: 'false' })),
    h('div', { className: 'field' }, h('label', { for: ids.createdAfter }, 'Created after'),
      h('input', { type: 'datetime-local', step: '1', id: ids.createdAfter, name: 'createdAfter', value: toLocalInput(filters.createdAfter) })),
    h('div', { className: 'field' }, h('label', { for: ids.createdBefore }, 'Created before'),
      h('input', { type: 'datetime-local', step: '1', id: ids.createdBefore, name: 'createdBefore', value: toLocalInput(filters.createdBefore) })),
    h('div', { className: 'buttons' },
      h('button', { type: 'submit', className: 'primary' }, 'Apply filters'),
      h('button', { type: 'button', onclick: () => go('#/operations') }, 'Clear')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = (n) => form.elements.namedItem(n).value.trim();
    const next = {
      state: v('state'), type: v('type'), target: v('target'),
      createdAfter: fromLocalInput(v('createdAfter')), createdBefore: fromLocalInput(v('createdBefore')),
    };
    const qs = new URLSearchParams(clean(next)).toString();
    go(qs ? `#/operations?${qs}` : '#/operations');
  });
  operationTypes().then((types) => {
    if (p.abort.signal.aborted) return;
    for (const t of types) {
      if (t.name !== filters.type) typeSelect.append(h('option', { value: t.name }, t.name));
    }
  }).catch(() => {});

  const status = h('p', { className: 'list-status', role: 'status' }, 'Loading…');
  const tbody = h('tbody');
  const table = h('table', { className: 'ops' },
    h('caption', { className: 'vh' }, 'Operations, newest first'),
    h('thead', {}, h('tr', {}, ['Operation', 'Type', 'Target', 'State', 'Progress', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
    tbody);
  const more = h('button', { type: 'button', className: 'more', hidden: true }, 'More');
  const errors = h('div');
  let cursor = null;
  let count = 0;

  const active = clean(filters);
  const summary = Object.keys(active).length
    ? h('p', { className: 'hint' }, 'Filtered by ', Object.entries(active).map(([k, v], i) => [i ? ', ' : '', `${k} `, h('code', {}, v)]), '.')
    : null;

  async function load() {
    more.disabled = true;
    try {
      const r = await api(p, 'GET', '/operations', { query: { ...active, limit: 20, cursor } });
      const items = (r.data && r.data.items) || [];
      for (const op of items) tbody.append(row(op));
      count += items.length;
      cursor = r.data && r.data.nextCursor;
      more.hidden = !cursor;
      more.disabled = false;
      table.hidden = count === 0;
      status.textContent = count === 0
        ? 'No operations match.'
        : `${count} operation${count === 1 ? '' : 's'} shown, newest first${cursor ? '; there are more.' : '.'}`;
      replace(errors);
    } catch (e) {
      if (aborted(e)) return;
      status.textContent = '';
      more.disabled = false;
      replace(errors, problemBox(e, 'The operations could not be listed.'));
    }
  }
  more.addEventListener('click', load);

  show('Operations',
    h('h1', {}, 'Operations'),
    search,
    h('details', { className: 'filters-box', open: true }, h('summary', {}, 'Filters'), form),
    summary,
    status,
    errors,
    table,
    more);
  table.hidden = true;
  load();
}

function clean(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v));
}

function row(op) {
  const cell = (label, ...c) => h('td', { 'data-label': label }, ...c);
  return h('tr', {},
    cell('Operation', h('a', { href: `#/operations/${op.operationId}`, className: 'mono' }, op.operationId)),
    cell('Type', op.type),
    cell('Target', h('span', { className: 'mono' }, op.target)),
    cell('State', badge(op.state)),
    cell('Progress', progressBar(op.progress, op.state)),
    cell('Created', time(op.createdAt)));
}

// ---- One operation ----------------------------------------------------------------------

function operationPage(id) {
  const p = newPage();
  let op = null;
  let pollTimer = null;
  let signalsBuilt = false;
  let resolveVersion = null;

  const heading = h('h1', {}, 'Operation ', h('span', { className: 'mono' }, id));
  const headBadge = h('span', { className: 'head-badge' });
  const summary = h('div', { className: 'summary' });
  const refreshNote = h('p', { className: 'refresh-note', role: 'status' }, 'Loading…');
  const errors = h('div');
  const flash = h('div', { 'aria-live': 'polite' });
  const outcome = h('section', { className: 'card', 'aria-labelledby': 'outcome-h', hidden: true });
  const input = h('section', { className: 'card', 'aria-labelledby': 'input-h', hidden: true });
  const actions = h('section', { className: 'card actions', 'aria-labelledby': 'actions-h', hidden: true });
  const signals = h('section', { className: 'card', 'aria-labelledby': 'signals-h', hidden: true });
  const resolve = h('section', { className: 'card', 'aria-labelledby': 'resolve-h', hidden: true });
  const timelineBox = h('div', { className: 'timeline-box' }, h('p', { className: 'muted' }, 'Loading the history…'));
  const eventsBox = h('div');
  const factsBox = h('div');

  // Cancel: one button, then a confirmation naming the version it is sent with (If-Match).
  const cancelResult = h('div', { 'aria-live': 'polite' });
  const cancelVersion = h('span');
  const confirmBox = h('div', { className: 'confirm', hidden: true },
    h('p', {}, 'Ask this operation to stop? Steps not yet run are skipped; what is done is not undone. Sent with ',
      h('code', {}, 'If-Match: ', cancelVersion), ': if the operation changed since the version shown, the API refuses it.'),
    h('div', { className: 'buttons' },
      h('button', { type: 'button', className: 'danger', onclick: () => cancel() }, 'Cancel the operation'),
      h('button', { type: 'button', onclick: () => { confirmBox.hidden = true; openCancel.focus(); } }, 'Keep it')));
  const openCancel = h('button', { type: 'button', className: 'danger-outline', onclick: () => { confirmBox.hidden = false; confirmBox.querySelector('button').focus(); } }, 'Cancel…');
  replace(actions, h('h2', { id: 'actions-h' }, 'Actions'), openCancel, confirmBox, cancelResult);

  async function cancel() {
    const version = op.version;
    replace(cancelResult, note('Cancelling…'));
    try {
      const r = await api(p, 'POST', `/operations/${id}/cancel`, { headers: { 'If-Match': `"${version}"` } });
      confirmBox.hidden = true;
      replace(cancelResult, note(`Cancel recorded at version ${r.data.version}: ${stateLabel(r.data.state)}.`, 'ok'));
      update(r.data, null);
      pollNow();
    } catch (e) {
      if (aborted(e)) return;
      replace(cancelResult, problemBox(e, 'The cancel was refused.'));
      if (e.status === 412) pollNow();
    }
  }

  function pollNow() {
    if (pollTimer) stop(p, pollTimer);
    refresh();
  }

  function update(o, ra) {
    op = o;
    document.title = `${o.operationId} · ${stateLabel(o.state)} · longrun`;
    replace(headBadge, badge(o.state));
    replace(summary, h('dl', { className: 'facts-list' },
      dt('Type', o.type),
      dt('Target', h('span', { className: 'mono' }, o.target)),
      dt('State', badge(o.state), o.terminal ? ' (final)' : ''),
      dt('Version', String(o.version)),
      dt('Progress', progressBar(o.progress, o.state)),
      o.awaiting ? dt('Awaiting', 'signal ', h('code', {}, o.awaiting.signal), ' since ', time(o.awaiting.since), ' until ', time(o.awaiting.until)) : null,
      o.retried ? dt('Retried', `step ${o.retried.step}, attempt ${o.retried.attempt}, `, time(o.retried.at), o.retried.reason ? `: ${o.retried.reason}` : '') : null,
      dt('Cancel requested', o.cancelRequested ? 'yes' : 'no'),
      dt('Created', time(o.createdAt)),
      dt('Updated', time(o.updatedAt)),
      dt('Last report from the executor', time(o.observedAt))));
    cancelVersion.textContent = `"${o.version}"`;
    actions.hidden = o.terminal || o.cancelRequested;
    signals.hidden = !['accepted', 'dispatched', 'running'].includes(o.state) || !signalsBuilt;
    resolve.hidden = !(app.operator && o.state === 'outcome_unknown');
    if (!resolve.hidden && resolveVersion !== o.version) { // a new version is a new decision
      resolveVersion = o.version;
      replace(resolve, h('h2', { id: 'resolve-h' }, 'Resolve (operator)'), resolveForm(o, (after) => {
        replace(flash, note(`Resolved: the operation is now ${stateLabel(after.state)} (version ${after.version}).`, 'ok'));
        update(after, null);
        pollNow();
      }));
    }
    if (o.result !== undefined || o.problem) {
      outcome.hidden = false;
      replace(outcome, h('h2', { id: 'outcome-h' }, o.result !== undefined ? 'Result' : 'Problem'),
        o.result !== undefined ? json(o.result) : operationProblem(o.problem));
    } else {
      outcome.hidden = true;
    }
    if (o.terminal) refreshNote.textContent = `Final state: ${stateLabel(o.state)}. Nothing more to refresh.`;
    else if (ra) refreshNote.textContent = `Updated ${new Date().toLocaleTimeString()}; the next look in ${ra} s (the API's Retry-After).`;
  }

  function renderHistory(hist) {
    const entries = (hist && hist.entries) || [];
    // The input is in the history's accepted entry: the representation leaves it out.
    const accepted = entries.find((e) => e.kind === 'accepted');
    if (accepted && accepted.input !== undefined) {
      input.hidden = false;
      replace(input, h('h2', { id: 'input-h' }, 'Input'), json(accepted.input),
        h('p', { className: 'hint' }, 'As admitted; the type\'s defaults are added for the worker.'));
    }
    const m = timeline.model(entries, { terminal: op.terminal });
    replace(timelineBox, entries.length ? timeline.render(m) : h('p', { className: 'muted' }, 'No history yet.'));
    const changes = timeline.changes(entries);
    replace(eventsBox, changes.length
      ? h('table', { className: 'events' },
        h('caption', { className: 'vh' }, 'State changes'),
        h('thead', {}, h('tr', {}, ['Time', 'From', 'To', 'Fact', 'By'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, changes.map((e) => h('tr', {},
          h('td', { 'data-label': 'Time' }, time(e.at)),
          h('td', { 'data-label': 'From' }, e.from ? badge(e.from) : h('span', { className: 'muted' }, '—')),
          h('td', { 'data-label': 'To' }, badge(e.state)),
          h('td', { 'data-label': 'Fact' }, e.kind),
          h('td', { 'data-label': 'By' }, e.by || '')))))
      : h('p', { className: 'muted' }, 'None yet.'));
    const t0 = entries.length ? Date.parse(entries[0].at) : 0;
    replace(factsBox, h('table', { className: 'history' },
      h('caption', { className: 'vh' }, 'Every fact'),
      h('thead', {}, h('tr', {}, ['Version', 'Time', 'After', 'Fact', 'State', 'By', 'Details'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, entries.map((e) => h('tr', {},
        h('td', { 'data-label': 'Version' }, String(e.version)),
        h('td', { 'data-label': 'Time' }, time(e.at)),
        h('td', { 'data-label': 'After' }, `+${duration(Date.parse(e.at) - t0)}`),
        h('td', { 'data-label': 'Fact' }, e.kind),
        h('td', { 'data-label': 'State' }, e.state ? badge(e.state) : ''),
        h('td', { 'data-label': 'By' }, e.by || ''),
        h('td', { 'data-label': 'Details' }, timeline.details(e)))))));
  }

  function buildSignals(type) {
    const decls = (type && type.signals) || [];
    if (!decls.length) return;
    signalsBuilt = true;
    replace(signals, h('h2', { id: 'signals-h' }, 'Signals'),
      h('p', { className: 'hint' }, 'Signals this operation’s type declares. Each send carries a new Idempotency-Key; sending the same data again after a failure retries with the same key.'),
      decls.map((d) => signalForm(d, makeSender(d))));
    signals.hidden = !['accepted', 'dispatched', 'running'].includes(op.state);
  }

  function makeSender(decl) {
    let attempt = null; // {key, body, done}
    return async (data, form, error) => {
      const out = form.querySelector('.form-result');
      if (error) {
        replace(out, note(error, 'error'));
        return;
      }
      const body = JSON.stringify(data);
      if (!attempt || attempt.done || attempt.body !== body) attempt = { key: crypto.randomUUID(), body, done: false };
      const button = form.querySelector('button[type=submit]');
      button.disabled = true;
      replace(out, note(`Sending ${decl.name}…`));
      try {
        const r = await api(p, 'POST', `/operations/${id}/signals/${encodeURIComponent(decl.name)}`, { body: data, headers: { 'Idempotency-Key': attempt.key } });
        attempt.done = true;
        const replayed = r.headers.get('Idempotent-Replayed') === 'true';
        replace(out, note(`Signal ${decl.name} ${replayed ? 'was already recorded' : 'recorded'}.`, 'ok'));
        pollNow();
      } catch (e) {
        if (aborted(e)) return;
        const retry = e.status === 0 || e.status >= 500;
        replace(out, problemBox(e, `Signal ${decl.name} was not recorded.`),
          retry ? h('p', { className: 'hint' }, 'Send again to retry with the same Idempotency-Key.') : null);
      } finally {
        button.disabled = false;
      }
    };
  }

  async function refresh() {
    let r;
    try {
      r = await api(p, 'GET', `/operations/${encodeURIComponent(id)}`);
    } catch (e) {
      if (aborted(e)) return;
      if (e.status === 404 && !op) {
        notFound();
        return;
      }
      replace(errors, problemBox(e, 'The operation could not be read.'));
      pollTimer = later(p, refresh, 10000);
      refreshNote.textContent = 'Trying again in 10 s.';
      return;
    }
    replace(errors);
    const first = !op;
    const ra = retryAfter(r.headers);
    update(r.data, ra);
    if (first) {
      operationTypes().then((types) => {
        if (!p.abort.signal.aborted) buildSignals(types.find((t) => t.name === op.type));
      }).catch(() => {});
    }
    try {
      const hist = await api(p, 'GET', `/operations/${encodeURIComponent(id)}/history`);
      renderHistory(hist.data);
    } catch (e) {
      if (aborted(e)) return;
      replace(timelineBox, problemBox(e, 'The history could not be read.'));
    }
    if (!op.terminal) pollTimer = later(p, refresh, (ra || 5) * 1000);
  }

  function notFound() {
    show('No such operation',
      h('h1', {}, 'No such operation'),
      h('p', {}, 'There is no operation with this id that you may see.'),
      h('p', {}, h('a', { href: '#/operations' }, 'Back to the operations')));
  }

  show(id,
    h('nav', { className: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/operations' }, 'Operations'), ' › ', h('span', { className: 'mono' }, id)),
    h('div', { className: 'head' }, heading, headBadge),
    refreshNote,
    flash,
    errors,
    h('div', { className: 'columns' },
      h('section', { className: 'card', 'aria-label': 'Representation' }, summary),
      h('div', { className: 'side' }, actions, signals, resolve, outcome, input)),
    h('section', { className: 'card', 'aria-labelledby': 'timeline-h' }, h('h2', { id: 'timeline-h' }, 'Timeline'), timelineBox),
    h('section', { className: 'card', 'aria-labelledby': 'events-h' }, h('h2', { id: 'events-h' }, 'Events'),
      h('p', { className: 'hint' }, 'The state changes, as the "Operation State Changed" events longrun published.'), eventsBox),
    h('section', { className: 'card', 'aria-labelledby': 'facts-h' },
      h('details', { className: 'every-fact' }, h('summary', {}, h('h2', { id: 'facts-h', className: 'inline-h' }, 'Every fact')), factsBox)));
  refresh();
}

function dt(term, ...def) {
  return h('div', { className: 'pair' }, h('dt', {}, term), h('dd', {}, ...def));
}

function operationProblem(pr) {
  return h('div', { className: 'op-problem' },
    h('p', { className: 'problem-title' }, pr.title, ' ', h('code', {}, pr.code)),
    pr.detail ? h('p', {}, pr.detail) : null);
}

// resolveForm settles an operation in outcome_unknown (operators): succeeded, failed or
// retry, always with a reason, sent with If-Match the version the operator saw.
function resolveForm(op, done) {
  const ids = { reason: uid('reason'), result: uid('result'), code: uid('code'), detail: uid('detail') };
  const out = h('div', { className: 'form-result', 'aria-live': 'polite' });
  const form = h('form', { className: 'resolve-form', noValidate: true },
    h('p', { className: 'hint' }, `Sent with If-Match "${op.version}", the version shown here.`),
    h('div', { className: 'field' }, h('label', { for: ids.reason }, 'Reason (required)'),
      h('textarea', { id: ids.reason, name: 'reason', rows: 2, maxLength: 1000, required: true })),
    h('details', {}, h('summary', {}, 'Result or problem (optional)'),
      h('div', { className: 'field' }, h('label', { for: ids.result }, 'Result, a JSON object (with succeeded)'),
        h('textarea', { id: ids.result, name: 'result', rows: 3, className: 'mono', spellcheck: 'false' })),
      h('div', { className: 'field' }, h('label', { for: ids.code }, 'Problem code (with failed)'),
        h('input', { type: 'text', id: ids.code, name: 'code', placeholder: 'operation_failed', pattern: '[a-z][a-z0-9_]{0,63}' })),
      h('div', { className: 'field' }, h('label', { for: ids.detail }, 'Problem detail (with failed)'),
        h('input', { type: 'text', id: ids.detail, name: 'detail', maxLength: 2000 }))),
    h('div', { className: 'buttons' },
      h('button', { type: 'submit', name: 'outcome', value: 'succeeded' }, 'Resolve: succeeded'),
      h('button', { type: 'submit', name: 'outcome', value: 'failed' }, 'Resolve: failed'),
      h('button', { type: 'submit', name: 'outcome', value: 'retry', className: 'primary' }, 'Retry the step')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const outcome = ev.submitter && ev.submitter.value;
    const v = (n) => form.elements.namedItem(n).value.trim();
    if (!v('reason')) {
      replace(out, note('A reason is required.', 'error'));
      form.elements.namedItem('reason').focus();
      return;
    }
    const body = { outcome, reason: v('reason') };
    if (outcome === 'succeeded' && v('result')) {
      try {
        body.result = JSON.parse(v('result'));
      } catch (e) {
        replace(out, note(`The result is not JSON: ${e.message}`, 'error'));
        return;
      }
    }
    if (outcome === 'failed' && (v('code') || v('detail'))) {
      const code = v('code') || 'operation_failed';
      body.problem = { type: `https://longrun.dev/problems/${code}`, title: 'Operation failed', code, detail: v('detail') };
    }
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    replace(out, note('Resolving…'));
    try {
      const r = await call('POST', `/operations/${op.operationId}/resolve`, { body, headers: { 'If-Match': `"${op.version}"` } });
      replace(out, note(`Resolved: the operation is now ${stateLabel(r.data.state)} (version ${r.data.version}).`, 'ok'));
      done(r.data);
    } catch (e) {
      replace(out, problemBox(e, 'The resolution was refused.'));
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  });
  return form;
}

// ---- Operators -----------------------------------------------------------------------

function operatorPage() {
  const p = newPage();
  if (!app.operator) {
    show('Operators only', h('h1', {}, 'Operators only'), h('p', {}, 'This page is for the deployment’s operators.'));
    return;
  }
  const statsBox = h('div', {}, h('p', { className: 'muted' }, 'Loading…'));
  const queue = h('ol', { className: 'queue' });
  const queueStatus = h('p', { role: 'status' }, 'Loading…');
  const queueErrors = h('div');
  const more = h('button', { type: 'button', className: 'more', hidden: true }, 'More');
  let cursor = null;
  let shown = 0;

  async function loadStats() {
    try {
      const r = await api(p, 'GET', '/stats');
      const s = r.data || {};
      const inFlight = s.inFlight || {};
      const counts = [...Object.entries(inFlight), ['outcome_unknown', s.outcomeUnknown ?? 0]]
        .sort(([a], [b]) => STATES.indexOf(a) - STATES.indexOf(b));
      const oldest = s.oldestInFlight;
      replace(statsBox,
        h('ul', { className: 'counts' }, counts.map(([state, n]) => h('li', {}, h('span', { className: 'count' }, String(n)), badge(state)))),
        h('p', { className: 'hint' }, 'As of ', time(s.asOf), s.partial ? '; partial: the count stopped at its bound of work.' : '.'),
        h('h3', {}, 'Oldest in flight'),
        oldest && oldest.operation
          ? h('p', { className: 'oldest' }, h('a', { href: `#/operations/${oldest.operation.operationId}`, className: 'mono' }, oldest.operation.operationId), ' ',
            badge(oldest.operation.state), ` tenant ${oldest.tenant}, ${oldest.operation.type}, created `, time(oldest.operation.createdAt),
            ` (${duration(Date.now() - Date.parse(oldest.operation.createdAt))} ago)`)
          : h('p', { className: 'muted' }, 'Nothing is in flight.'));
    } catch (e) {
      if (!aborted(e)) replace(statsBox, problemBox(e, 'The counts could not be read.'));
    }
  }

  function item(it) {
    const op = it.operation;
    const li = h('li', { className: 'card queue-item' },
      h('h3', {}, h('a', { href: `#/operations/${op.operationId}`, className: 'mono' }, op.operationId)),
      h('p', {}, badge(op.state), ` tenant `, h('strong', {}, it.tenant), ` · ${op.type} · `, h('span', { className: 'mono' }, op.target)),
      h('p', { className: 'hint' }, 'Outcome unknown since ', time(op.updatedAt), `; version ${op.version}.`),
      op.problem ? operationProblem(op.problem) : null);
    li.append(resolveForm(op, (after) => {
      loadStats();
      li.querySelector('form').replaceWith(note(`Resolved: the operation is now ${stateLabel(after.state)} (version ${after.version}).`, 'ok'));
      li.classList.add('resolved');
    }));
    return li;
  }

  async function loadQueue(reset) {
    if (reset) {
      cursor = null;
      shown = 0;
      replace(queue);
    }
    more.disabled = true;
    try {
      const r = await api(p, 'GET', '/attention', { query: { limit: 20, cursor } });
      const items = (r.data && r.data.items) || [];
      for (const it of items) queue.append(item(it));
      shown += items.length;
      cursor = r.data && r.data.nextCursor;
      more.hidden = !cursor;
      queueStatus.textContent = shown ? `${shown === 1 ? '1 operation waits' : `${shown} operations wait`} for an operator, oldest first${cursor ? '; there are more' : ''}.` : 'Nothing waits for an operator.';
      replace(queueErrors);
    } catch (e) {
      if (aborted(e)) return;
      queueStatus.textContent = '';
      replace(queueErrors, problemBox(e, 'The queue could not be read.'));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', () => loadQueue(false));

  show('Operator',
    h('div', { className: 'head' }, h('h1', {}, 'Operator'),
      h('button', { type: 'button', onclick: () => { loadStats(); loadQueue(true); } }, 'Refresh')),
    h('section', { className: 'card', 'aria-labelledby': 'stats-h' }, h('h2', { id: 'stats-h' }, 'In flight'), statsBox),
    h('section', { 'aria-labelledby': 'queue-h' }, h('h2', { id: 'queue-h' }, 'Waiting for an operator'),
      h('p', { className: 'hint' }, 'Operations of every tenant whose outcome is unknown. Resolve each: succeeded or failed if you know how it ended, or retry its step.'),
      queueStatus, queueErrors, queue, more));
  loadStats();
  loadQueue(true);
}

// ---- Start -----------------------------------------------------------------------------

async function boot() {
  try {
    const r = await fetch('config.json', { cache: 'no-store', credentials: 'omit' });
    if (r.ok) app.config = await r.json();
  } catch {
    // token sign-in
  }
  whenUnauthenticated(() => {
    clearToken();
    showSignIn('The API did not accept your sign-in (it may have expired). Sign in again.');
  });
  document.getElementById('sign-out').addEventListener('click', signOut);
  // The skip link moves focus without touching the address, which holds the page's route.
  document.querySelector('.skip').addEventListener('click', (ev) => {
    ev.preventDefault();
    main.focus();
  });
  window.addEventListener('hashchange', () => {
    if (token()) route();
  });
  if (app.config.signIn === 'cognito') {
    const r = await finishCognitoSignIn(app.config.cognito);
    if (r && r.error) {
      showSignIn(r.error);
      return;
    }
  }
  if (!token()) {
    showSignIn();
    return;
  }
  await signedIn();
}

boot();
