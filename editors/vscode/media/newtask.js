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
      // What was wrong with the field is gone once it is typed in again.
      const err = document.getElementById('error-' + input.id);
      if (err) err.textContent = '';
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
    s.addEventListener('change', () => {
      draft[key] = s.value;
      save();
      // Another type or profile pre-selects its profile's default skills (while the person has not chosen).
      if ((key === 'type' || key === 'profile') && !draft.skillsTouched) rerender();
    });
    return s;
  }

  /** The skills shown ticked: the person's choice, else the profile's defaults (what familiar gives an untouched task). */
  function shownSkills() {
    if (draft.skillsTouched) return draft.skills;
    const prof = draft.profile || (lists.typeProfile || {})[draft.type] || 'default';
    return lists.skills.filter((s) => (s.defaultFor || []).includes(prof)).map((s) => s.name);
  }

  function checkbox(id, label, checked, onChange, title) {
    const cb = el('input', { type: 'checkbox', id });
    cb.checked = !!checked;
    cb.addEventListener('change', () => onChange(cb.checked));
    const l = el('label', { for: id, title: title || '' });
    l.appendChild(cb);
    l.appendChild(document.createTextNode(' ' + label));
    return l;
  }

  function render(profiles, skills) {
    form.textContent = '';
    form.appendChild(el('h1', {}, 'New Task'));
    const title = el('input', { id: 'title', name: 'title', type: 'text', placeholder: 'A short title', autocomplete: 'off' });
    title.value = draft.title;
    bind(title, 'title');
    form.appendChild(field('Title', title, 'title'));
    const desc = el('textarea', { id: 'description', name: 'description', rows: '8', placeholder: 'What should the agent do? Newlines are kept; @ mentions a file or folder.' });
    desc.value = draft.description;
    bind(desc, 'description');
    form.appendChild(field('Description', desc, 'description'));
    window.familiarMentions(desc, (m) => vscode.postMessage(m));

    const row = el('div', { class: 'row' });
    row.appendChild(field('Type', select('type', 'type', [
      ['implement', 'implement — build something new'], ['fix', 'fix — fix a bug'], ['refactor', 'refactor — structure, not behaviour'],
      ['test', 'test — write or repair tests'], ['custom', 'custom — the default profile']]), 'type'));
    row.appendChild(field('Mode', select('mode', 'mode', [
      ['executor', 'executor — changes code, runs commands'], ['architect', 'architect — plans only'], ['auditor', 'auditor — reviews, changes nothing']]), 'mode'));
    const profSel = select('profile', 'profile', [['', '(the type\'s default)'], ...profiles.map((p) => [p.name, p.name])]);
    row.appendChild(field('Profile', profSel, 'profile'));
    const prio = el('input', { id: 'priority', name: 'priority', type: 'number', step: '1' });
    prio.value = String(draft.priority || 0);
    bind(prio, 'priority', true);
    row.appendChild(field('Priority', prio, 'priority', 'Higher starts first.'));
    // The model (task/create model), and which login the agent uses, in words.
    if ((lists.models || []).length) row.appendChild(field('Model', select('model', 'model', lists.models), 'model', lists.login ? 'Login: ' + lists.login : undefined));
    form.appendChild(row);

    if (skills.length) {
      const box = el('div', { class: 'skills', id: 'skills' });
      const ticked = shownSkills();
      for (const sk of skills) {
        const id = 'skill-' + sk.name.replace(/[^a-zA-Z0-9_-]/g, '_');
        const l = checkbox(id, sk.name, ticked.includes(sk.name), (on) => {
          // The first change makes the whole shown selection the person's.
          const now = shownSkills();
          draft.skills = on ? [...now.filter((n) => n !== sk.name), sk.name] : now.filter((n) => n !== sk.name);
          draft.skillsTouched = true;
          save();
          hint.textContent = skillsHint();
        }, (sk.description || '') + (sk.path ? '\n' + sk.path : ''));
        l.appendChild(el('span', { class: 'hint' }, ' (' + sk.where + ')'));
        box.appendChild(l);
      }
      const hint = el('div', { class: 'hint', id: 'skills-hint' }, skillsHint());
      box.appendChild(hint);
      form.appendChild(field('Skills', box, 'skills'));
    }

    // Directives: elevated says what it allows, before and while it is on.
    const w = lists.words || {};
    const dirs = el('div', { class: 'skills', id: 'directives' });
    const d = draft.directives || {};
    const warnBox = el('div', { class: 'warning', id: 'elevated-warning', role: 'alert' }, d.elevated ? w.elevatedWarning : '');
    for (const k of ['think', 'verbose', 'elevated']) {
      dirs.appendChild(checkbox('directive-' + k, k, d[k], (on) => {
        draft.directives = Object.assign({}, draft.directives, { [k]: on });
        if (k === 'elevated') warnBox.textContent = on ? w.elevatedWarning : '';
        save();
      }, w[k] || ''));
    }
    dirs.appendChild(warnBox);
    form.appendChild(field('Directives', dirs, 'directives'));

    // MCP servers this task adds (familiar's presets), each checked when added.
    if ((lists.presets || []).length) {
      const box = el('div', { class: 'mcp', id: 'mcp' });
      for (const p of lists.presets) {
        const id = 'mcp-' + p.name.replace(/[^a-zA-Z0-9_-]/g, '_');
        const on = (draft.mcpPresets || []).includes(p.name);
        const row = el('div', { class: 'preset' });
        row.appendChild(checkbox(id, p.name, on, (v) => {
          draft.mcpPresets = v ? [...(draft.mcpPresets || []).filter((n) => n !== p.name), p.name] : (draft.mcpPresets || []).filter((n) => n !== p.name);
          save();
          state.textContent = v ? 'checking…' : '';
          state.className = 'hint check';
          if (v) vscode.postMessage({ type: 'checkPreset', name: p.name });
        }, p.detail));
        const state = el('span', { class: 'hint check', id: id + '-check' }, checks[p.name] && on ? checks[p.name].text : '');
        if (checks[p.name] && on && !checks[p.name].ok) state.className = 'error check';
        row.appendChild(state);
        box.appendChild(row);
        if (on && !checks[p.name]) vscode.postMessage({ type: 'checkPreset', name: p.name });
      }
      box.appendChild(el('div', { class: 'hint' }, 'Added to this task\'s MCP servers, besides the session\'s (setting familiar.mcpServers).'));
      form.appendChild(field('MCP servers', box, 'mcpServers'));
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
    // A save still pending would bring the discarded draft back.
    discard.addEventListener('click', () => { clearTimeout(saveTimer); vscode.postMessage({ type: 'discard' }); });
    bar.appendChild(create);
    bar.appendChild(cancel);
    bar.appendChild(discard);
    bar.appendChild(el('span', { class: 'hint' }, 'Ctrl+Enter creates. Escape or closing the tab keeps the draft.'));
    form.appendChild(bar);
    // Once: a render after a change of type keeps the focus where the person is.
    if (!focused) title.focus();
    focused = true;
  }
  let focused = false;

  let lists = { profiles: [], skills: [], presets: [], typeProfile: {}, words: {} };
  /** The last check of each preset: {ok, text}. */
  const checks = {};
  function skillsHint() {
    if (draft.skillsTouched) return 'Your choice: the task gets exactly these.';
    const prof = draft.profile || (lists.typeProfile || {})[draft.type] || 'default';
    return shownSkills().length ? 'Ticked: the defaults of the profile ' + prof + '.' : 'The profile ' + prof + ' has no default skills.';
  }
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
      lists = { profiles: m.profiles || [], skills: m.skills || [], presets: m.presets || [], typeProfile: m.typeProfile || {}, words: m.words || {}, models: m.models || [], login: m.login || '' };
      rerender();
    } else if (m.type === 'draft') {
      draft = m.draft;
      rerender();
    } else if (m.type === 'presetCheck') {
      checks[m.name] = { ok: m.ok, text: m.text };
      const box = document.getElementById('mcp-' + m.name.replace(/[^a-zA-Z0-9_-]/g, '_') + '-check');
      if (box && (draft.mcpPresets || []).includes(m.name)) {
        box.textContent = m.text;
        box.className = (m.ok ? 'hint' : 'error') + ' check';
      }
    } else if (m.type === 'error') {
      const box = document.getElementById('error-' + m.field) || document.getElementById('error-title');
      box.textContent = m.message;
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
