// A form for a signal's data, built from the JSON Schema its type declares: a field per
// property of the kinds a form handles (string, number, integer, boolean, enum), or one
// raw-JSON text area when the schema asks for more.

import { h, uid } from './dom.js';

function kindOf(s) {
  if (!s || typeof s !== 'object') return null;
  if (Array.isArray(s.enum) && s.enum.length && s.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) return 'enum';
  if (s.const !== undefined) return null;
  const t = Array.isArray(s.type) ? s.type.filter((x) => x !== 'null') : [s.type];
  if (t.length !== 1) return null;
  return ['string', 'number', 'integer', 'boolean'].includes(t[0]) ? t[0] : null;
}

// fieldsOf is the form's fields, or null when the schema needs the raw-JSON fallback.
export function fieldsOf(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if (schema.type !== undefined && schema.type !== 'object') return null;
  if (schema.oneOf || schema.anyOf || schema.allOf || schema.if || schema.$ref || schema.patternProperties) return null;
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const fields = [];
  for (const [name, s] of Object.entries(props)) {
    const kind = kindOf(s);
    if (!kind) return null;
    fields.push({ name, kind, schema: s, required: required.has(name) });
  }
  for (const r of required) if (!(r in props)) return null;
  return fields.length ? fields : null;
}

function control(f, id) {
  const s = f.schema;
  const describedBy = s.description ? `${id}-desc` : undefined;
  switch (f.kind) {
    case 'boolean':
      if (f.required) return h('input', { type: 'checkbox', id, name: f.name, 'aria-describedby': describedBy });
      return h('select', { id, name: f.name, 'aria-describedby': describedBy },
        h('option', { value: '' }, '(not set)'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    case 'enum':
      return h('select', { id, name: f.name, required: f.required, 'aria-describedby': describedBy },
        f.required ? null : h('option', { value: '' }, '(not set)'),
        s.enum.map((v, i) => h('option', { value: String(i) }, JSON.stringify(v))));
    case 'number':
    case 'integer':
      return h('input', {
        type: 'number', id, name: f.name, required: f.required, step: f.kind === 'integer' ? '1' : 'any',
        min: s.minimum, max: s.maximum, 'aria-describedby': describedBy,
      });
    default:
      return h('input', {
        type: 'text', id, name: f.name, required: f.required && (s.minLength ?? 1) > 0, maxLength: s.maxLength,
        autocomplete: 'off', 'aria-describedby': describedBy,
      });
  }
}

// valueOf reads one field; {skip} when it is empty and optional, {error} when invalid.
function valueOf(f, el) {
  const s = f.schema;
  switch (f.kind) {
    case 'boolean':
      if (el.type === 'checkbox') return { value: el.checked };
      return el.value === '' ? { skip: true } : { value: el.value === 'true' };
    case 'enum':
      return el.value === '' ? { skip: true } : { value: s.enum[Number(el.value)] };
    case 'number':
    case 'integer': {
      if (el.value === '') return f.required ? { error: `${f.name} is required.` } : { skip: true };
      const n = Number(el.value);
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) return { error: `${f.name} must be ${f.kind === 'integer' ? 'a whole number' : 'a number'}.` };
      return { value: n };
    }
    default:
      if (el.value === '' && !f.required) return { skip: true };
      return { value: el.value };
  }
}

// signalForm builds the form for one signal declaration; send(data, form) is called with the
// data on submit and does the sending.
export function signalForm(decl, send) {
  const fields = fieldsOf(decl.schema);
  const formId = uid(`signal-${decl.name}`);
  const body = [];
  let read;
  if (fields) {
    for (const f of fields) {
      const id = `${formId}-${f.name}`;
      const input = control(f, id);
      const text = `${f.name}${f.required ? '' : ' (optional)'}`;
      body.push(h('div', { className: f.kind === 'boolean' && f.required ? 'field field-check' : 'field' },
        f.kind === 'boolean' && f.required ? [input, h('label', { for: id }, text)] : [h('label', { for: id }, text), input],
        f.schema.description ? h('span', { className: 'hint', id: `${id}-desc` }, f.schema.description) : null));
    }
    read = (form) => {
      const data = {};
      for (const f of fields) {
        const r = valueOf(f, form.elements.namedItem(f.name));
        if (r.error) return { error: r.error };
        if (!r.skip) data[f.name] = r.value;
      }
      return { data };
    };
  } else {
    const id = `${formId}-json`;
    body.push(h('div', { className: 'field' },
      h('label', { for: id }, 'Data (a JSON object)'),
      h('textarea', { id, name: 'json', rows: 5, spellcheck: 'false', className: 'mono', value: '{}' }),
      h('details', { className: 'hint' }, h('summary', {}, 'Schema'), h('pre', { className: 'json' }, JSON.stringify(decl.schema, null, 2)))));
    read = (form) => {
      try {
        const data = JSON.parse(form.elements.namedItem('json').value);
        if (!data || typeof data !== 'object' || Array.isArray(data)) return { error: 'The data must be a JSON object.' };
        return { data };
      } catch (e) {
        return { error: `The data is not JSON: ${e.message}` };
      }
    };
  }
  const who = [...(decl.senders || [])].join(', ');
  const form = h('form', { className: 'signal-form', id: formId, noValidate: true },
    h('fieldset', {},
      h('legend', {}, `Signal ${decl.name}`),
      h('p', { className: 'hint' }, `May be sent by: ${who || '—'}${decl.notCreator ? '; not by the operation’s creator' : ''}.`),
      body,
      h('div', { className: 'buttons' }, h('button', { type: 'submit', className: 'primary' }, `Send ${decl.name}`)),
      h('div', { className: 'form-result', 'aria-live': 'polite' })));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const r = read(form);
    if (r.error) {
      send(null, form, r.error);
      return;
    }
    send(r.data, form, null);
  });
  return form;
}
