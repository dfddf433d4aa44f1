// The task view's page. Everything it shows comes from agents and
// repositories: it is put in with textContent and DOM nodes, never as HTML.
// It talks to the extension by messages only.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const head = document.getElementById('head');
  const log = document.getElementById('log');
  const nodes = new Map();
  let id = (vscode.getState() || {}).id;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function button(label, onClick, cls) {
    const b = el('button', cls || '', label);
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }

  // Markdown, the little agents write: fenced code, headings, lists,
  // paragraphs, `code`, **bold**, *em*. Built as nodes, so nothing in the
  // text can become markup.
  function inline(parent, s) {
    const re = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*)/g;
    let last = 0, m;
    while ((m = re.exec(s))) {
      if (m.index > last) parent.appendChild(document.createTextNode(s.slice(last, m.index)));
      const t = m[0];
      if (t[0] === '`') parent.appendChild(el('code', '', t.slice(1, -1)));
      else if (t.startsWith('**')) parent.appendChild(el('strong', '', t.slice(2, -2)));
      else parent.appendChild(el('em', '', t.slice(1, -1)));
      last = m.index + t.length;
    }
    if (last < s.length) parent.appendChild(document.createTextNode(s.slice(last)));
  }

  function markdown(text) {
    const box = el('div', 'md');
    const lines = text.split('\n');
    let i = 0, para = [], list = null;
    const flush = () => {
      if (para.length) { const p = el('p'); inline(p, para.join(' ')); box.appendChild(p); para = []; }
      list = null;
    };
    while (i < lines.length) {
      const l = lines[i];
      const fence = /^\s*```/.exec(l);
      if (fence) {
        flush();
        const code = [];
        i++;
        while (i < lines.length && !/^\s*```/.test(lines[i])) code.push(lines[i++]);
        i++;
        box.appendChild(el('pre', 'code', code.join('\n')));
        continue;
      }
      const h = /^(#{1,6})\s+(.*)$/.exec(l);
      const li = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(l);
      if (h) { flush(); const e = el('h' + Math.min(6, h[1].length + 2)); inline(e, h[2]); box.appendChild(e); }
      else if (li) {
        if (para.length) { const p = el('p'); inline(p, para.join(' ')); box.appendChild(p); para = []; }
        if (!list) { list = el(/^\s*\d/.test(l) ? 'ol' : 'ul'); box.appendChild(list); }
        const e = el('li'); inline(e, li[1]); list.appendChild(e);
      } else if (!l.trim()) flush();
      else { list = null; para.push(l); }
      i++;
    }
    flush();
    return box;
  }

  function render(it) {
    let n;
    switch (it.kind) {
      case 'prompt': {
        // The person's words as they typed them: plain text, line breaks
        // kept (the extension sends the person's words for the first
        // prompt, not familiar's template around them).
        n = el('div', 'item prompt' + (it.who === 'Familiar' ? ' from-familiar' : ''));
        n.appendChild(el('div', 'who', it.who || 'You'));
        n.appendChild(el('div', 'words', it.text || ''));
        break;
      }
      case 'text':
        n = el('div', 'item text');
        n.appendChild(markdown(it.text || ''));
        break;
      case 'thinking': {
        n = el('details', 'item thinking');
        n.appendChild(el('summary', '', 'Thinking'));
        n.appendChild(el('div', 'pre', it.text || ''));
        break;
      }
      case 'tool': {
        const r = it.row;
        n = el('details', 'item tool status-' + r.status);
        const s = el('summary');
        s.appendChild(el('span', 'mark', r.status === 'completed' ? '✓' : r.status === 'failed' ? '✗' : '…'));
        s.appendChild(el('span', 'title', r.title));
        s.appendChild(el('span', 'status', r.status));
        if (r.duration) s.appendChild(el('span', 'dur', r.duration));
        if (r.files.length) s.appendChild(el('span', 'files', r.files.join(', ')));
        n.appendChild(s);
        (it.diffs || []).forEach((d, i) => {
          const box = el('div', 'diff');
          const bar = el('div', 'diffbar');
          bar.appendChild(el('span', 'path', d.path));
          bar.appendChild(button('Open in diff editor', () => vscode.postMessage({ type: 'openDiff', key: it.key, index: i }), 'link'));
          box.appendChild(bar);
          const pre = el('pre', 'lines');
          for (const [op, line] of d.lines) pre.appendChild(el('div', op === '+' ? 'add' : op === '-' ? 'del' : 'ctx', op + ' ' + line));
          box.appendChild(pre);
          n.appendChild(box);
        });
        // An edit shows its diff at once; other calls open on a click.
        if ((it.diffs || []).length) n.open = true;
        if (it.input) { n.appendChild(el('div', 'label', 'Input')); n.appendChild(el('pre', 'code', it.input)); }
        if (it.result) {
          n.appendChild(el('div', 'label', it.resultWhole ? 'Result (its start)' : 'Result'));
          n.appendChild(el('pre', 'code', it.result));
          if (it.resultWhole) n.appendChild(button('Open the whole result', () => vscode.postMessage({ type: 'openResult', key: it.key }), 'link'));
        }
        break;
      }
      case 'plan': {
        n = el('div', 'item plan');
        n.appendChild(el('div', 'who', 'Plan'));
        const ul = el('ul', 'checklist');
        for (const p of it.plan || []) {
          const li = el('li', 'plan-' + p.status);
          li.appendChild(el('span', 'box', p.status === 'completed' ? '☑' : p.status === 'in_progress' ? '◐' : '☐'));
          li.appendChild(el('span', '', ' ' + p.content));
          ul.appendChild(li);
        }
        n.appendChild(ul);
        break;
      }
      case 'turn':
        n = el('div', 'item turn', it.usage);
        break;
      case 'hook': {
        // A verbose task's hook call: its name and subject, the payload on a click.
        n = el('details', 'item hook');
        const s = el('summary');
        s.appendChild(el('span', 'who', 'Hook'));
        s.appendChild(el('span', 'title', ' ' + (it.text || '')));
        n.appendChild(s);
        if (it.input) n.appendChild(el('pre', 'code', it.input));
        break;
      }
      default:
        n = el('div', 'item');
    }
    n.dataset.key = it.key;
    return n;
  }

  // A verbose task's hook calls, in the order they came, in a box of their
  // own below the conversation: they arrive as claude makes them, its
  // transcript later, so among the rows they stood before the prompt that
  // caused them.
  let hooks = null;
  function hookBox() {
    if (!hooks) {
      hooks = el('details', 'hooks');
      hooks.id = 'hooks';
      hooks.appendChild(el('summary'));
      log.after(hooks);
    }
    return hooks;
  }
  function countHooks() {
    const n = hooks ? hooks.querySelectorAll('.item.hook').length : 0;
    if (hooks) hooks.firstChild.textContent = 'Hook calls (' + n + '): this task is verbose';
  }

  // A long conversation is drawn from its end: the rows before come a page
  // at a time when the person scrolls up to the first (or clicks the row
  // that says how many there are).
  let earlierRow = null;
  let asking = false;
  // The rows kept while following the end (the host's window); past twice
  // that the host is asked to take the oldest back (trim, one at a time).
  let windowRows = 0;
  let trimming = false;
  const askEarlier = () => { if (!asking) { asking = true; vscode.postMessage({ type: 'earlier' }); } };
  const seen = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) askEarlier(); });
  function showEarlier(n) {
    if (!n) {
      if (earlierRow) { seen.unobserve(earlierRow); earlierRow.remove(); earlierRow = null; }
      return;
    }
    if (!earlierRow) {
      earlierRow = el('div', 'earlier');
      earlierRow.appendChild(button('', askEarlier, 'link'));
      seen.observe(earlierRow);
    }
    earlierRow.firstChild.textContent = `${n} earlier ${n === 1 ? 'entry' : 'entries'}: show them`;
    log.insertBefore(earlierRow, log.firstChild);
  }

  function put(it) {
    const old = nodes.get(it.key);
    const n = render(it);
    // Keep a call's row open or closed as the person left it.
    if (old && old.tagName === 'DETAILS' && n.tagName === 'DETAILS' && !(it.diffs || []).length) n.open = old.open;
    nodes.set(it.key, n);
    if (old) old.replaceWith(n);
    else if (it.kind === 'hook') { hookBox().appendChild(n); countHooks(); }
    else log.appendChild(n);
  }

  // The message box: Enter sends (task/send, queued until the agent is
  // idle), Shift+Enter is a new line; Stop ends the running turn; Stop and
  // send ends it and sends at once.
  const message = document.getElementById('message');
  // @ lists the workspace's files and folders; Add Selection attaches the editor's selected lines.
  const mention = window.familiarMentions(message, (m) => vscode.postMessage(m));
  document.getElementById('attach').addEventListener('click', () => vscode.postMessage({ type: 'attachSelection' }));
  const composeNote = document.getElementById('composeNote');
  const stopButton = document.getElementById('stop');
  const steerButton = document.getElementById('steer');
  const sendButton = document.getElementById('send');
  let compose = { enabled: false, stop: false, note: '' };
  function send(steer) {
    const text = message.value;
    if (!text.trim() || !compose.enabled) return;
    vscode.postMessage({ type: 'send', text, steer: !!steer });
    message.value = '';
    saveDraft();
    syncCompose();
  }
  function syncCompose() {
    message.disabled = !compose.enabled;
    sendButton.disabled = !compose.enabled || !message.value.trim();
    stopButton.hidden = !compose.stop;
    steerButton.hidden = !compose.stop;
    steerButton.disabled = !message.value.trim();
    composeNote.textContent = compose.note || '';
  }
  // What is typed survives a reload of the view (a hidden tab's page is dropped).
  function saveDraft() { vscode.setState(Object.assign({}, vscode.getState() || {}, { id, draft: message.value })); }
  message.value = (vscode.getState() || {}).draft || '';
  message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send(e.ctrlKey || e.metaKey ? compose.stop : false);
    }
  });
  message.addEventListener('input', () => { saveDraft(); syncCompose(); });
  sendButton.addEventListener('click', () => send(false));
  steerButton.addEventListener('click', () => send(true));
  stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));

  // Messages typed and not yet in the conversation: the person's, saying where they are.
  const outgoing = document.getElementById('outgoing');
  let outgoingKey = '';
  function showOutgoing(list) {
    const key = JSON.stringify(list || []);
    if (key === outgoingKey) return;
    outgoingKey = key;
    outgoing.textContent = '';
    for (const o of list || []) {
      const n = el('div', 'item prompt outgoing state-' + o.state);
      n.dataset.key = o.key;
      n.appendChild(el('div', 'who', 'You'));
      n.appendChild(el('div', 'words', o.text));
      const note = el('div', 'note', o.note);
      if (o.state === 'failed') {
        note.appendChild(document.createTextNode(' '));
        note.appendChild(button('Put it back in the box', () => {
          message.value = o.text;
          saveDraft();
          syncCompose();
          vscode.postMessage({ type: 'dismissOutgoing', key: o.key });
        }, 'link'));
      }
      n.appendChild(note);
      outgoing.appendChild(n);
    }
  }

  // The pending question, where it is read: answered here or in its notification.
  const card = document.getElementById('card');
  let cardKey = '';
  function answer(questionId, action, extra) {
    vscode.postMessage(Object.assign({ type: 'answer', questionId, action }, extra || {}));
  }
  function showCard(c) {
    const key = JSON.stringify(c || null);
    if (key === cardKey) return;
    cardKey = key;
    card.textContent = '';
    if (!c) return;
    const box = el('div', 'card ' + c.kind);
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', 'Question from the agent');
    box.appendChild(el('div', 'who', 'Waiting on you'));
    const bar = el('div', 'choices');
    if (c.kind === 'permission') {
      box.appendChild(el('div', 'ask', c.title));
      if (c.detail) box.appendChild(el('pre', 'code command', c.detail));
      if (c.reviewable) bar.appendChild(button('Review…', () => answer(c.id, 'review')));
      bar.appendChild(button('Allow', () => answer(c.id, 'allow'), 'primary allow'));
      bar.appendChild(button('Deny', () => answer(c.id, 'deny'), 'deny'));
      const why = el('div', 'denywhy');
      why.hidden = true;
      const input = el('input', 'denytext');
      input.type = 'text';
      input.placeholder = 'What the agent should do instead';
      input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && input.value.trim()) answer(c.id, 'deny', { text: input.value }); });
      why.appendChild(input);
      why.appendChild(button('Deny with this message', () => { if (input.value.trim()) answer(c.id, 'deny', { text: input.value }); }));
      bar.appendChild(button('Deny with a message…', () => { why.hidden = false; input.focus(); }));
      if (c.always) bar.appendChild(button('Allow Always…', () => answer(c.id, 'always')));
      if (c.acceptEdits) bar.appendChild(button('Allow and accept edits for this task', () => answer(c.id, 'acceptEdits')));
      box.appendChild(bar);
      box.appendChild(why);
      if (c.alwaysWhyNot) box.appendChild(el('div', 'hint', c.alwaysWhyNot));
    } else {
      box.appendChild(el('div', 'ask words', c.title));
      for (const o of c.options || []) bar.appendChild(button(o.label, () => answer(c.id, 'option', o.id ? { optionId: o.id } : { text: o.label }), 'option'));
      if (c.closing) bar.appendChild(button('Mark done', () => answer(c.id, 'markDone')));
      box.appendChild(bar);
      if (c.answersInBox) {
        // The message box below answers it: one place to type, as in a chat.
        box.appendChild(el('div', 'hint', (c.options || []).length ? 'Or answer in your own words in the message box below.' : 'Answer in the message box below.'));
      } else if (c.allowText) {
        const row = el('div', 'answerrow');
        const input = el('input', 'answertext');
        input.type = 'text';
        input.placeholder = (c.options || []).length ? 'Or answer in your words' : 'Your answer';
        input.addEventListener('keydown', (e) => { if (e.key === 'Enter' && input.value.trim()) answer(c.id, 'text', { text: input.value }); });
        row.appendChild(input);
        row.appendChild(button('Answer', () => { if (input.value.trim()) answer(c.id, 'text', { text: input.value }); }));
        box.appendChild(row);
      }
    }
    if (c.expiresAt) {
      const d = new Date(c.expiresAt);
      if (!isNaN(d.getTime())) box.appendChild(el('div', 'hint', 'Denied automatically at ' + d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + ' if unanswered.'));
    }
    card.appendChild(box);
    if (window.innerHeight + window.scrollY >= document.body.scrollHeight - 200) window.scrollTo(0, document.body.scrollHeight);
  }

  function showHead(h) {
    compose = h.compose || compose;
    syncCompose();
    showOutgoing(h.outgoing);
    showCard(h.card);
    head.textContent = '';
    head.appendChild(el('h1', '', h.title));
    head.appendChild(el('div', 'state', h.state));
    if (h.question) head.appendChild(el('div', 'question', 'Waiting on you: ' + h.question));
    const dl = el('dl', 'facts');
    for (const [k, v, whole] of h.facts) {
      dl.appendChild(el('dt', '', k));
      const dd = el('dd', '', v);
      if (whole) {
        // Shown short (a worktree is far from the repository): the whole in its tooltip, and Copy.
        dd.title = whole;
        dd.appendChild(document.createTextNode(' '));
        const copy = button('Copy', () => vscode.postMessage({ type: 'copyFact', name: k }), 'link copy');
        copy.title = 'Copy ' + whole;
        dd.appendChild(copy);
      }
      dl.appendChild(dd);
    }
    if (h.cost) { dl.appendChild(el('dt', '', 'Used')); dl.appendChild(el('dd', 'cost', h.cost)); }
    head.appendChild(dl);
    const bar = el('div', 'actions');
    for (const a of h.actions) bar.appendChild(button(a.label, () => vscode.postMessage({ type: 'command', command: a.command })));
    head.appendChild(bar);
  }

  window.addEventListener('message', (e) => {
    const m = e.data;
    switch (m.type) {
      case 'focusMessage':
        message.focus();
        break;
      case 'insertText':
        if (compose.enabled) mention.insert(m.text);
        break;
      case 'head':
        if (m.id !== id) {
          // Another task in this tab (the preview): its own box, empty.
          const other = id !== undefined;
          id = m.id;
          if (other) { message.value = ''; outgoingKey = ''; cardKey = ''; }
          saveDraft();
        }
        showHead(m.head);
        break;
      case 'reset': {
        log.textContent = '';
        nodes.clear();
        windowRows = m.window || 0;
        trimming = false;
        if (hooks) { hooks.remove(); hooks = null; }
        // Built off the page and put in at once: one layout, not one per row.
        const frag = document.createDocumentFragment();
        const hookFrag = document.createDocumentFragment();
        for (const it of m.items) {
          const n = render(it);
          nodes.set(it.key, n);
          (it.kind === 'hook' ? hookFrag : frag).appendChild(n);
        }
        log.appendChild(frag);
        showEarlier(m.earlier || 0);
        if (hookFrag.childNodes.length) { hookBox().appendChild(hookFrag); countHooks(); }
        if (!m.items.some((it) => it.kind !== 'hook')) log.appendChild(el('div', 'empty', 'Nothing yet: the conversation shows here as the agent works.'));
        window.scrollTo(0, document.body.scrollHeight);
        requestAnimationFrame(() => vscode.postMessage({ type: 'rendered', items: m.items.length }));
        break;
      }
      case 'earlier': {
        // Rows before the first drawn, put in above it; the page stays where the person reads.
        asking = false;
        const frag = document.createDocumentFragment();
        const hookFrag = document.createDocumentFragment();
        for (const it of m.items) {
          if (nodes.has(it.key)) continue;
          const n = render(it);
          nodes.set(it.key, n);
          (it.kind === 'hook' ? hookFrag : frag).appendChild(n);
        }
        const first = earlierRow && earlierRow.parentNode === log ? earlierRow.nextSibling : log.firstChild;
        // The row read before stays where it was on the screen, whatever
        // the browser's own scroll anchoring did (it moves the page too,
        // except at its very top: adding both put the page at its end).
        const before = first ? first.getBoundingClientRect().top : 0;
        log.insertBefore(frag, first);
        if (hookFrag.childNodes.length) { hookBox().insertBefore(hookFrag, hookBox().firstChild); countHooks(); }
        if (first) window.scrollBy(0, first.getBoundingClientRect().top - before);
        showEarlier(m.earlier || 0);
        break;
      }
      case 'items': {
        const empty = log.querySelector('.empty');
        if (empty) empty.remove();
        // Whether to follow the end is read once per batch (it forces a layout).
        const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
        for (const it of m.items) put(it);
        if (atEnd) {
          window.scrollTo(0, document.body.scrollHeight);
          if (windowRows && !trimming && log.childElementCount > 2 * windowRows) {
            trimming = true;
            vscode.postMessage({ type: 'trim' });
          }
        }
        break;
      }
      case 'trimmed': {
        trimming = false;
        const atEnd = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
        for (const key of m.keys) {
          const n = nodes.get(key);
          if (n) { n.remove(); nodes.delete(key); }
        }
        showEarlier(m.earlier || 0);
        if (atEnd) window.scrollTo(0, document.body.scrollHeight);
        break;
      }
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
