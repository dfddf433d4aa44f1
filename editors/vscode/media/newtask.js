// New Task's form. Values from the workspace (file names, the selection,
// profile and skill descriptions) go in as text only. Every change is sent
// back as the draft, so nothing typed is lost when the tab closes.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const form = document.getElementById('form');
  let draft = null;
  let saveTimer;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function save() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => vscode.postMessage({ type: 'draft', draft }), 150);
  }

  function field(label, input, id, hint) {
    const row = el('div', { class: 'field', id: 'field-' + id });
    const l = el('label', { for: id }, label);
    row.appendChild(l);
    row.appendChild(input);
    if (hint) row.appendChild(el('div', { class: 'hint' }, hint));
    row.appendChild(el('div', { class: 'error', id: 'error-' + id, role: 'alert' }));
    return row;
  }

  function bind(input, key, num) {
    input.addEventListener('input', () => {
      draft[key] = num ? Number(input.value) || 0 : input.value;
      save();
    });
  }

  function select(id, key, options) {
    const s = el('select', { id, name: id });
    for (const [value, label] of options) {
      const o = el('option', { value }, label);
      if (draft[key] === value) o.selected = true;
      s.appendChild(o);
    }
    s.addEventListener('change', () => { draft[key] = s.value; save(); });
    return s;
  }

  function render(profiles, skills) {
    form.textContent = '';
    form.appendChild(el('h1', {}, 'New Task'));
    const title = el('input', { id: 'title', name: 'title', type: 'text', placeholder: 'A short title', autocomplete: 'off' });
    title.value = draft.title;
    bind(title, 'title');
    form.appendChild(field('Title', title, 'title'));
    const desc = el('textarea', { id: 'description', name: 'description', rows: '8', placeholder: 'What should the agent do? Newlines are kept.' });
    desc.value = draft.description;
    bind(desc, 'description');
    form.appendChild(field('Description', desc, 'description'));

    const row = el('div', { class: 'row' });
    row.appendChild(field('Type', select('type', 'type', [
      ['implement', 'implement — build something new'], ['fix', 'fix — fix a bug'], ['refactor', 'refactor — structure, not behaviour'],
      ['test', 'test — write or repair tests'], ['custom', 'custom — the default profile']]), 'type'));
    row.appendChild(field('Mode', select('mode', 'mode', [
      ['executor', 'executor — changes code, runs commands'], ['architect', 'architect — plans only'], ['auditor', 'auditor — reviews, changes nothing']]), 'mode'));
    row.appendChild(field('Profile', select('profile', 'profile', [['', '(the type\'s default)'], ...profiles.map((p) => [p.name, p.name])]), 'profile'));
    const prio = el('input', { id: 'priority', name: 'priority', type: 'number', step: '1' });
    prio.value = String(draft.priority || 0);
    bind(prio, 'priority', true);
    row.appendChild(field('Priority', prio, 'priority', 'Higher starts first.'));
    form.appendChild(row);

    if (skills.length) {
      const box = el('div', { class: 'skills', id: 'skills' });
      for (const sk of skills) {
        const id = 'skill-' + sk.name.replace(/[^a-zA-Z0-9_-]/g, '_');
        const cb = el('input', { type: 'checkbox', id });
        cb.checked = draft.skills.includes(sk.name);
        cb.addEventListener('change', () => {
          draft.skills = cb.checked ? [...draft.skills, sk.name] : draft.skills.filter((n) => n !== sk.name);
          save();
        });
        const l = el('label', { for: id, title: sk.description || '' });
        l.appendChild(cb);
        l.appendChild(document.createTextNode(' ' + sk.name));
        box.appendChild(l);
      }
      form.appendChild(field('Skills', box, 'skills'));
    }
    const crit = el('textarea', { id: 'criteria', name: 'criteria', rows: '3', placeholder: 'One per line (optional)' });
    crit.value = draft.criteria;
    bind(crit, 'criteria');
    form.appendChild(field('Acceptance criteria', crit, 'acceptanceCriteria'));

    // What the editor adds: shown, each removable.
    const ctx = el('div', { class: 'context', id: 'context' });
    if (!draft.files.length && !draft.notes) ctx.appendChild(el('div', { class: 'hint' }, 'Nothing from the editor.'));
    for (const f of draft.files) {
      const chip = el('div', { class: 'chip' });
      chip.appendChild(el('span', {}, 'File: ' + f));
      const x = el('button', { type: 'button', class: 'link', 'aria-label': 'Remove ' + f }, 'Remove');
      x.addEventListener('click', () => { draft.files = draft.files.filter((n) => n !== f); save(); rerender(); });
      chip.appendChild(x);
      ctx.appendChild(chip);
    }
    if (draft.notes) {
      const chip = el('div', { class: 'chip' });
      chip.appendChild(el('pre', { class: 'code' }, draft.notes));
      const x = el('button', { type: 'button', class: 'link', 'aria-label': 'Remove the selection' }, 'Remove the selection');
      x.addEventListener('click', () => { draft.notes = ''; save(); rerender(); });
      chip.appendChild(x);
      ctx.appendChild(chip);
    }
    form.appendChild(field('From the editor', ctx, 'context'));

    const bar = el('div', { class: 'actions' });
    const create = el('button', { type: 'submit', id: 'create', class: 'primary' }, 'Create Task');
    const cancel = el('button', { type: 'button', id: 'cancel' }, 'Close (keep the draft)');
    const discard = el('button', { type: 'button', id: 'discard', class: 'link' }, 'Discard the draft');
    cancel.addEventListener('click', () => { flush(); vscode.postMessage({ type: 'cancel' }); });
    discard.addEventListener('click', () => vscode.postMessage({ type: 'discard' }));
    bar.appendChild(create);
    bar.appendChild(cancel);
    bar.appendChild(discard);
    bar.appendChild(el('span', { class: 'hint' }, 'Ctrl+Enter creates. Escape or closing the tab keeps the draft.'));
    form.appendChild(bar);
    title.focus();
  }

  let lists = { profiles: [], skills: [] };
  function rerender() { render(lists.profiles, lists.skills); }
  function flush() { clearTimeout(saveTimer); vscode.postMessage({ type: 'draft', draft }); }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const n of document.querySelectorAll('.error')) n.textContent = '';
    clearTimeout(saveTimer);
    vscode.postMessage({ type: 'create', draft });
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
    if (e.key === 'Escape') { flush(); vscode.postMessage({ type: 'cancel' }); }
  });

  window.addEventListener('message', (e) => {
    const m = e.data;
    if (m.type === 'init') {
      draft = m.draft;
      lists = { profiles: m.profiles || [], skills: m.skills || [] };
      rerender();
    } else if (m.type === 'draft') {
      draft = m.draft;
      rerender();
    } else if (m.type === 'error') {
      const box = document.getElementById('error-' + m.field) || document.getElementById('error-title');
      box.textContent = m.message;
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
