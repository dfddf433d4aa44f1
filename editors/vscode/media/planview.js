// The plan view's page (plans.ts): built with textContent only.
(function () {
  const vscode = acquireVsCodeApi();
  const $ = (id) => document.getElementById(id);
  let plan; // the last plan familiar sent
  let steps = []; // the steps as edited here: {id, title, description, needs, ...spec}
  let meta = {}; // per step id: {line, editable, retry, skip}
  let info = {};
  let dirty = false;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function button(text, title, onclick, primary) {
    const b = el('button', primary ? 'primary' : '', text);
    b.type = 'button';
    if (title) b.title = title;
    b.addEventListener('click', onclick);
    return b;
  }
  function specOf(s) {
    const out = { id: s.id, title: s.title, description: s.description, needs: [...(s.needs || [])] };
    for (const k of ['acceptanceCriteria', 'files']) if (s[k] && s[k].length) out[k] = [...s[k]];
    for (const k of ['mode', 'profile']) if (s[k]) out[k] = s[k];
    return out;
  }
  function changed() {
    dirty = true;
    renderBar();
    $('graph').textContent = 'Order: ' + graph(steps);
  }
  function graph(list) {
    const ids = new Set(list.map((s) => s.id));
    const level = new Map();
    for (let r = 0; r <= list.length; r++) {
      for (const s of list) {
        if (level.has(s.id)) continue;
        const needs = (s.needs || []).filter((n) => ids.has(n));
        if (needs.every((n) => level.has(n))) level.set(s.id, needs.length ? Math.max(...needs.map((n) => level.get(n))) + 1 : 0);
      }
    }
    const out = [];
    for (const s of list) { const l = level.get(s.id); if (l !== undefined) (out[l] = out[l] || []).push(s.id); }
    const circle = list.filter((s) => !level.has(s.id)).map((s) => s.id);
    return out.filter(Boolean).map((l) => l.join(', ')).join(' → ') + (circle.length ? ' (in a circle: ' + circle.join(', ') + ')' : '');
  }

  function render() {
    const head = $('head');
    head.textContent = '';
    head.append(el('h1', '', info.label));
    head.append(el('div', 'state', info.state));
    if (plan.why) head.append(el('div', 'why', plan.why));
    if (plan.goal) head.append(el('div', 'hint', 'Goal: ' + plan.goal.split('\n')[0]));
    if (info.totals) head.append(el('div', 'totals', info.totals));
    const probs = $('problems');
    probs.textContent = '';
    if (plan.problems && plan.problems.length) {
      const ul = el('ul');
      for (const p of plan.problems) ul.append(el('li', '', (p.step ? p.step + ' · ' + p.field + ': ' : '') + p.message));
      probs.append(ul);
    }
    if (plan.warnings && plan.warnings.length) {
      const ul = el('ul', 'warnings');
      for (const w of plan.warnings) ul.append(el('li', '', w.message));
      probs.append(ul);
    }
    $('graph').textContent = steps.length ? 'Order: ' + graph(steps) : '';
    const list = $('steps');
    list.textContent = '';
    steps.forEach((s, i) => list.append(stepCard(s, i)));
    renderBar();
  }

  function stepCard(s, i) {
    const m = meta[s.id] || { line: 'new: saved with Save Changes', editable: true };
    const can = info.editable && m.editable;
    const li = el('li', 'step s-' + (plan.steps.find((x) => x.id === s.id) || { state: 'new' }).state);
    li.dataset.index = String(i);
    const top = el('div', 'top');
    if (can) {
      const h = el('span', 'handle', '⠿');
      h.title = 'Drag to reorder';
      top.append(h);
      li.draggable = true;
    }
    top.append(el('span', 'sid', s.id));
    if (can) {
      const t = el('input', 'stitle');
      t.type = 'text';
      t.value = s.title;
      t.setAttribute('aria-label', 'Title of step ' + s.id);
      t.addEventListener('input', () => { s.title = t.value; changed(); });
      top.append(t);
    } else top.append(el('span', 'stitle', s.title));
    li.append(top);
    if (can) {
      const d = el('textarea');
      d.rows = Math.min(8, Math.max(2, s.description.split('\n').length));
      d.value = s.description;
      d.setAttribute('aria-label', 'What step ' + s.id + ' does');
      d.addEventListener('input', () => { s.description = d.value; changed(); });
      li.append(d);
      const needs = el('div', 'needs');
      needs.append(el('label', 'hint', 'After:'));
      const n = el('input');
      n.type = 'text';
      n.value = (s.needs || []).join(', ');
      n.placeholder = 'the ids of the steps it builds on, e.g. api, ui';
      n.setAttribute('aria-label', 'Steps that step ' + s.id + ' needs');
      n.addEventListener('input', () => { s.needs = n.value.split(/[\s,]+/).filter(Boolean); changed(); });
      needs.append(n);
      li.append(needs);
    } else {
      const d = el('div', 'pre', s.description.length > 400 ? s.description.slice(0, 399) + '…' : s.description);
      li.append(d);
      if (s.needs && s.needs.length) li.append(el('div', 'hint', 'After: ' + s.needs.join(', ')));
    }
    li.append(el('div', 'line', m.line));
    const b = el('div', 'buttons');
    if (can) {
      if (i > 0) b.append(button('Up', 'Move the step up', () => { move(i, i - 1); }));
      if (i < steps.length - 1) b.append(button('Down', 'Move the step down', () => { move(i, i + 1); }));
      b.append(button('Remove', 'Remove the step (its dependents then need editing)', () => { steps.splice(i, 1); changed(); render(); }));
    }
    if (m.retry) b.append(button('Retry', 'Run the step again as a new task, from the base as it is now', () => vscode.postMessage({ type: 'retry', step: s.id })));
    if (m.skip) b.append(button('Skip', 'The step will not run; the steps that need it wait for you', () => vscode.postMessage({ type: 'skip', step: s.id })));
    const p = plan.steps.find((x) => x.id === s.id);
    if (p && p.taskId) b.append(button('Open Task', 'The step\'s task: its conversation and changes', () => vscode.postMessage({ type: 'openTask', id: p.taskId })));
    li.append(b);
    li.addEventListener('dragstart', (e) => { li.classList.add('dragging'); e.dataTransfer.setData('text/plain', String(i)); });
    li.addEventListener('dragend', () => li.classList.remove('dragging'));
    li.addEventListener('dragover', (e) => { if (info.editable) { e.preventDefault(); li.classList.add('over'); } });
    li.addEventListener('dragleave', () => li.classList.remove('over'));
    li.addEventListener('drop', (e) => {
      e.preventDefault();
      li.classList.remove('over');
      const from = Number(e.dataTransfer.getData('text/plain'));
      if (!isNaN(from) && from !== i) move(from, i);
    });
    return li;
  }

  function move(from, to) {
    const [s] = steps.splice(from, 1);
    steps.splice(to, 0, s);
    changed();
    render();
  }

  function renderBar() {
    const bar = $('edit');
    bar.textContent = '';
    if (info.editable) {
      bar.append(button('Add Step', 'A new step at the end', () => {
        let n = steps.length + 1;
        while (steps.some((s) => s.id === 'step' + n)) n++;
        steps.push({ id: 'step' + n, title: 'New step', description: '', needs: [] });
        changed();
        render();
      }));
      if (dirty) {
        bar.append(button('Save Changes', 'Check the steps and keep them (plan/update)', () => {
          $('error').textContent = '';
          vscode.postMessage({ type: 'save', steps: steps.map(specOf) });
        }, true));
        bar.append(button('Discard Changes', '', () => { dirty = false; $('error').textContent = ''; steps = plan.steps.map(specOf); render(); }));
      }
    }
    const st = plan.state;
    if (st === 'draft' && !dirty) bar.append(button('Run', 'Start the steps whose needs are met; each merges through the merge queue when done', () => vscode.postMessage({ type: 'run' }), true));
    if (['drafting', 'draft', 'running', 'held'].includes(st)) bar.append(button('Cancel Plan', 'No step starts any more; live steps are cancelled; what merged stays', () => vscode.postMessage({ type: 'cancel' })));
    if (plan.steps.some((s) => s.state === 'merged') && ['done', 'held', 'cancelled', 'running'].includes(st)) bar.append(button('Undo Plan', 'Take every merge of the plan back, newest first', () => vscode.postMessage({ type: 'undo' })));
  }

  window.addEventListener('message', (e) => {
    const m = e.data;
    if (m.type === 'plan') {
      // A refusal said before is no longer the news once the plan moved on.
      if (plan && plan.state !== m.plan.state) $('error').textContent = '';
      plan = m.plan;
      info = m;
      meta = {};
      for (const s of m.steps) meta[s.id] = s;
      if (!dirty) steps = plan.steps.map(specOf);
      vscode.setState({ id: plan.id });
      // Not while the person types in it: a step's state line changes
      // often while the plan runs.
      const active = document.activeElement;
      if (dirty && active && (active.tagName === 'INPUT' || active.tagName === 'TEXTAREA')) {
        for (const s of m.steps) {
          const card = [...document.querySelectorAll('.step')].find((c) => c.querySelector('.sid') && c.querySelector('.sid').textContent === s.id);
          if (card) card.querySelector('.line').textContent = s.line;
        }
        return;
      }
      render();
    } else if (m.type === 'saved') {
      dirty = false;
      $('error').textContent = '';
      steps = plan.steps.map(specOf);
      render();
    } else if (m.type === 'error') {
      $('error').textContent = m.message;
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
