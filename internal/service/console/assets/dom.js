// Small DOM and formatting helpers. Everything the console shows is built with these, as
// elements and text nodes: no HTML string from data is ever parsed.

// h builds an element: attrs are properties (className, textContent, onclick, …) or, for
// names with a dash or "for", attributes; children are nodes, strings or arrays of them.
// null, undefined and false children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'for') el.htmlFor = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k.includes('-') || k === 'role' || k === 'scope' || k === 'colspan' || k === 'spellcheck') el.setAttribute(k, v === true ? '' : String(v));
    else el[k] = v;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// clear empties el and puts children in.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let seq = 0;
// uid is an id unique to this page, for label/input pairs.
export function uid(prefix) {
  seq += 1;
  return `${prefix}-${seq}`;
}

// The operation states, in their lifecycle's order, and whether each is terminal.
export const STATES = ['accepted', 'dispatched', 'running', 'cancelling', 'outcome_unknown', 'succeeded', 'failed', 'canceled'];
export const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

// stateLabel is how a state reads to people.
export function stateLabel(state) {
  return state === 'outcome_unknown' ? 'outcome unknown' : String(state || '');
}

// badge is a state as a colour and a word.
export function badge(state) {
  return h('span', { className: `badge state-${state}` }, h('span', { className: 'dot', 'aria-hidden': 'true' }), stateLabel(state));
}

// progressBar is an operation's progress: a bar for percent (or completed of total steps),
// and the steps and the worker's message as text.
export function progressBar(progress, state) {
  if (!progress) {
    return h('span', { className: 'muted' }, TERMINAL.has(state) ? '—' : 'no step completed yet');
  }
  const done = progress.completedSteps;
  // A total the worker reported below the steps done (a step that only waited counts as one)
  // says nothing of how far it is.
  const total = progress.totalSteps && progress.totalSteps >= done ? progress.totalSteps : null;
  let pct = null;
  if (typeof progress.percent === 'number') pct = progress.percent;
  else if (total) pct = (100 * done) / total;
  else if (state === 'succeeded') pct = 100;
  const steps = total ? `${done} of ${total} step${total === 1 ? '' : 's'}` : `${done} step${done === 1 ? '' : 's'} done`;
  const text = pct === null ? steps : `${Math.round(pct)}% · ${steps}`;
  const wrap = h('span', { className: 'progress' });
  if (pct !== null) {
    const fill = h('span', { className: `fill state-${state}` });
    fill.style.width = `${Math.min(100, Math.max(0, pct))}%`;
    wrap.append(h('span', {
      className: 'track', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100',
      'aria-valuenow': String(Math.round(pct)), 'aria-label': 'Progress',
    }, fill));
  }
  wrap.append(h('span', { className: 'progress-text' }, text));
  if (progress.message) wrap.append(h('span', { className: 'progress-message' }, progress.message));
  return wrap;
}

// time is an instant as a <time> element: local date and time, the UTC instant as its title.
export function time(iso) {
  if (!iso) return h('span', { className: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, iso);
  return h('time', { dateTime: iso, title: iso }, formatLocal(d));
}

export function formatLocal(d) {
  return d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

// duration is milliseconds for people: 350 ms, 1.2 s, 2 min 5 s, 1 h 3 min.
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - 60 * m)} s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m - 60 * hrs} min`;
  return `${Math.floor(hrs / 24)} d ${hrs % 24} h`;
}

// json is a value as indented JSON in a <pre>.
export function json(value) {
  return h('pre', { className: 'json' }, JSON.stringify(value, null, 2));
}

// localInput turns an RFC 3339 instant into a datetime-local input's value, and back.
export function toLocalInput(iso) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fromLocalInput(value) {
  if (!value) return '';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}
