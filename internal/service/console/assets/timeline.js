// An operation's history (GET /v1/operations/{id}/history) on a time axis: the lifecycle's
// facts as marks, each step as a bar with its duration, waits and awaited signals as bars,
// signals as marks. Positioned elements, not a canvas: every mark and bar carries its text.

import { h, duration, formatLocal } from './dom.js';

const ENDINGS = new Set(['succeeded', 'failed', 'canceled', 'outcome_unknown']);

const LANES = [
  ['life', 'Lifecycle'],
  ['steps', 'Steps'],
  ['waits', 'Waits and signals'],
];

function ms(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

function label(kind) {
  return {
    accepted: 'accepted', dispatched: 'dispatched', started: 'started', cancel_requested: 'cancel requested',
    succeeded: 'succeeded', failed: 'failed', canceled: 'canceled', outcome_unknown: 'outcome unknown',
    retried: 'retried', signaled: 'signal', progress: 'progress',
  }[kind] || kind;
}

// model reads the history into marks and spans on one axis from the first fact to the last
// (or to now, while the operation goes on).
export function model(entries, { now = Date.now(), terminal = false } = {}) {
  const facts = [...entries].filter((e) => ms(e.at) !== null).sort((a, b) => a.version - b.version);
  const marks = [];
  const spans = [];
  if (!facts.length) return { start: now, end: now, marks, spans };
  let step = null; // the step in flight: {n, attempt, from}
  let wait = null; // a timed wait: {from, until}
  let awaited = null; // an awaited signal: {signal, from, until}
  let attemptOf = {}; // step → the attempt a retry asked for
  // A step's bar ends at the next fact of the work; when the work reported several steps
  // done at once (fast steps' progress is held back), the bar is those steps together.
  const closeStep = (at, how, done) => {
    if (!step) return;
    const attempt = step.attempt > 1 ? ` (attempt ${step.attempt})` : '';
    const name = done > step.n ? `Steps ${step.n}–${done}` : `Step ${step.n}`;
    spans.push({ lane: 'steps', from: step.from, to: at, kind: how || 'step', label: `${name}${attempt}` });
    step = null;
  };
  const closeWaits = (at) => {
    if (wait) {
      spans.push({ lane: 'waits', from: wait.from, to: Math.min(at, wait.until ?? at), kind: 'wait', label: 'Wait' });
      wait = null;
    }
    if (awaited) {
      spans.push({ lane: 'waits', from: awaited.from, to: at, kind: 'await', label: `Awaiting ${awaited.signal}` });
      awaited = null;
    }
  };
  for (const e of facts) {
    const at = ms(e.at);
    const by = e.by ? ` by ${e.by}` : '';
    switch (e.kind) {
      case 'accepted':
      case 'dispatched':
      case 'started':
      case 'cancel_requested':
        marks.push({ lane: 'life', at, kind: e.kind, label: label(e.kind), title: `${label(e.kind)}${by}${e.reason ? `: ${e.reason}` : ''}` });
        break;
      case 'retried': {
        const r = e.retry || {};
        if (r.step) attemptOf = { ...attemptOf, [r.step]: r.attempt || 2 };
        marks.push({ lane: 'life', at, kind: 'retried', label: `retry step ${r.step ?? '?'}`, title: `Step ${r.step ?? '?'} run again (attempt ${r.attempt ?? '?'})${by}${e.reason ? `: ${e.reason}` : ''}` });
        break;
      }
      case 'signaled': {
        const name = (e.signal && e.signal.name) || 'signal';
        marks.push({ lane: 'waits', at, kind: 'signaled', label: `${name} received`, title: `Signal ${name}${by}` });
        break;
      }
      default:
        break;
    }
    // A step ends where the work reports again: progress, an ending, a new step, a wait.
    const done = e.progress ? e.progress.completedSteps : 0;
    if (ENDINGS.has(e.kind)) {
      closeStep(at, e.kind === 'outcome_unknown' ? 'unknown' : e.kind === 'failed' ? 'failed' : 'step', done);
      closeWaits(at);
      marks.push({ lane: 'life', at, kind: e.kind, label: label(e.kind), title: `${label(e.kind)}${by}${e.reason ? `: ${e.reason}` : ''}${e.problem ? ` (${e.problem.code})` : ''}` });
    } else if (e.kind === 'progress' || e.stepStarted !== undefined || e.waitingUntil || e.awaiting) {
      if (e.kind === 'progress' || e.stepStarted !== undefined) closeStep(at, 'step', done);
      if (e.stepStarted !== undefined || e.kind === 'progress' || e.kind === 'started') closeWaits(at);
    }
    if (e.stepStarted !== undefined && e.stepStarted !== null && !ENDINGS.has(e.kind)) {
      step = { n: e.stepStarted, attempt: attemptOf[e.stepStarted] || 1, from: at };
    }
    if (e.waitingUntil && !ENDINGS.has(e.kind)) wait = { from: at, until: ms(e.waitingUntil) };
    if (e.awaiting && !ENDINGS.has(e.kind)) awaited = { signal: e.awaiting.signal, from: at, until: ms(e.awaiting.until) };
  }
  const start = ms(facts[0].at);
  const last = ms(facts[facts.length - 1].at);
  const end = terminal ? last : Math.max(last, now);
  // What is still going on runs to the axis's end.
  if (step) spans.push({ lane: 'steps', from: step.from, to: end, kind: 'step', label: `Step ${step.n}${step.attempt > 1 ? ` (attempt ${step.attempt})` : ''}`, open: true });
  if (wait) spans.push({ lane: 'waits', from: wait.from, to: Math.min(end, wait.until ?? end), kind: 'wait', label: 'Wait', open: true });
  if (awaited) spans.push({ lane: 'waits', from: awaited.from, to: end, kind: 'await', label: `Awaiting ${awaited.signal}`, open: true });
  return { start, end: Math.max(end, start + 1), marks, spans };
}

// changes are the history's state changes: the facts whose state differs from the one
// before, as the "Operation State Changed" events longrun published.
export function changes(entries) {
  const out = [];
  let prev = null;
  for (const e of [...entries].sort((a, b) => a.version - b.version)) {
    if (e.state && e.state !== prev) out.push({ ...e, from: prev });
    if (e.state) prev = e.state;
  }
  return out;
}

// CHAR is roughly a label's character width as a share of a 900-pixel track, for laying
// labels out on rows that do not overlap.
const CHAR_PX = 7;

// render draws the model.
export function render(m, { trackPx = 900 } = {}) {
  const span = m.end - m.start;
  const pos = (t) => (100 * (t - m.start)) / span;
  const lanes = LANES.map(([id, name]) => {
    const items = [
      ...m.marks.filter((k) => k.lane === id).map((k) => ({ ...k, x0: pos(k.at), x1: pos(k.at) })),
      ...m.spans.filter((s) => s.lane === id).map((s) => ({ ...s, x0: pos(s.from), x1: pos(s.to) })),
    ].sort((a, b) => a.x0 - b.x0);
    const rows = []; // per row, the [from, to] (in %) its items and labels take
    const els = [];
    for (const it of items) {
      const isSpan = it.to !== undefined;
      const text = isSpan ? `${it.label} · ${duration(it.to - it.from)}${it.open ? ' so far' : ''}` : it.label;
      const textWidth = (100 * (text.length * CHAR_PX + 20)) / trackPx;
      const flip = !isSpan && it.x0 > 70; // a mark near the end has its label on its left
      const box = flip ? [it.x0 - textWidth, it.x0] : [it.x0, it.x0 + Math.max(it.x1 - it.x0, textWidth)];
      let row = rows.findIndex((r) => r.every(([a, b]) => box[1] + 0.5 <= a || b + 0.5 <= box[0]));
      if (row < 0) {
        row = rows.length;
        rows.push([]);
      }
      rows[row].push(box);
      const at = isSpan ? `${formatLocal(new Date(it.from))} to ${formatLocal(new Date(it.to))}` : formatLocal(new Date(it.at));
      let el;
      if (isSpan) {
        el = h('div', { className: `tl-span tl-${it.kind}${it.open ? ' tl-open' : ''}`, title: `${text} (${at})` },
          h('span', { className: 'tl-bar', 'aria-hidden': 'true' }),
          h('span', { className: 'tl-label' }, text));
        el.style.left = `${it.x0}%`;
        el.style.width = `${Math.max(0, it.x1 - it.x0)}%`;
      } else {
        el = h('div', { className: `tl-mark tl-${it.kind}${flip ? ' tl-flip' : ''}`, title: `${it.title || text} (${at})` },
          h('span', { className: 'tl-dot', 'aria-hidden': 'true' }),
          h('span', { className: 'tl-label' }, text));
        el.style.left = `${it.x0}%`;
      }
      el.style.top = `${row * 1.75}rem`;
      els.push(el);
    }
    const track = h('div', { className: 'tl-track' }, els);
    track.style.height = `${Math.max(1, rows.length) * 1.75 + 0.25}rem`;
    return h('div', { className: 'tl-lane', role: 'listitem' },
      h('div', { className: 'tl-lane-name' }, name),
      items.length ? track : h('div', { className: 'tl-track tl-empty' }, h('span', { className: 'muted' }, 'nothing')));
  });
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const t = h('span', { className: 'tl-tick' }, f === 0 ? formatLocal(new Date(m.start)) : `+${duration(f * span)}`);
    t.style.left = `${f * 100}%`;
    if (f === 1) t.classList.add('tl-flip');
    return t;
  });
  return h('div', { className: 'timeline' },
    h('div', { role: 'list', 'aria-label': 'Timeline lanes' }, lanes),
    h('div', { className: 'tl-axis', 'aria-hidden': 'true' }, h('div', { className: 'tl-lane-name' }), h('div', { className: 'tl-ticks' }, ticks)));
}

// details is what a history entry says beyond its kind and state, as text.
export function details(e) {
  const parts = [];
  if (e.stepStarted !== undefined) parts.push(`step ${e.stepStarted} started`);
  if (e.progress) {
    const p = e.progress;
    const of = p.totalSteps && p.totalSteps >= p.completedSteps ? ` of ${p.totalSteps}` : '';
    parts.push(`${p.completedSteps} step${p.completedSteps === 1 ? '' : 's'} done${of}${typeof p.percent === 'number' ? `, ${Math.round(p.percent)}%` : ''}${p.message ? `: ${p.message}` : ''}`);
  }
  if (e.waitingUntil) parts.push(`waits until ${formatLocal(new Date(e.waitingUntil))}`);
  if (e.awaiting) parts.push(`awaits ${e.awaiting.signal}${e.awaiting.until ? ` until ${formatLocal(new Date(e.awaiting.until))}` : ''}`);
  if (e.signal) parts.push(`signal ${e.signal.name}`);
  if (e.retry) parts.push(`step ${e.retry.step} again, attempt ${e.retry.attempt}`);
  if (e.problem) parts.push(`${e.problem.code}: ${e.problem.detail || e.problem.title}`);
  if (e.reason) parts.push(`reason: ${e.reason}`);
  if (e.actor) parts.push(`actor: ${e.actor}`);
  return parts.join('; ');
}

