// @-mentions in a webview's text box: typing "@" and a few letters lists
// the workspace's files and folders (asked of the extension, which knows
// them); ↑/↓ choose, Enter or Tab take one, Escape closes the list. Used by
// New Task's description and the task view's message box.
(function () {
  /** Attaches the completion to textarea; post sends a message to the extension. */
  window.familiarMentions = function (textarea, post) {
    const list = document.createElement('div');
    list.className = 'mentions';
    list.setAttribute('role', 'listbox');
    list.hidden = true;
    textarea.insertAdjacentElement('afterend', list);
    let items = [];
    let active = 0;
    let seq = 0;
    let token; // { start, end } of "@query" before the caret

    function current() {
      const upto = textarea.value.slice(0, textarea.selectionStart);
      const m = /(^|\s)@([^\s@]*)$/.exec(upto);
      if (!m || textarea.selectionStart !== textarea.selectionEnd) return undefined;
      return { start: upto.length - m[2].length - 1, end: textarea.selectionStart, q: m[2] };
    }
    function close() { list.hidden = true; items = []; token = undefined; }
    function draw() {
      list.textContent = '';
      items.forEach((p, i) => {
        const o = document.createElement('div');
        o.className = 'mention' + (i === active ? ' active' : '');
        o.setAttribute('role', 'option');
        o.setAttribute('aria-selected', String(i === active));
        o.textContent = p;
        o.addEventListener('mousedown', (e) => { e.preventDefault(); take(i); });
        list.appendChild(o);
      });
      list.hidden = items.length === 0;
    }
    function take(i) {
      const t = current() || token;
      if (!t || !items[i]) return close();
      const p = items[i];
      const v = textarea.value;
      const ins = '@' + p + (p.endsWith('/') ? '' : ' ');
      textarea.value = v.slice(0, t.start) + ins + v.slice(t.end);
      const at = t.start + ins.length;
      textarea.setSelectionRange(at, at);
      close();
      textarea.dispatchEvent(new Event('input', { bubbles: true }));
    }
    textarea.addEventListener('input', () => {
      token = current();
      if (!token) return close();
      post({ type: 'mentionQuery', q: token.q, seq: ++seq });
    });
    textarea.addEventListener('blur', () => setTimeout(close, 100));
    // Capture: before the box's own Enter (send) and the form's Escape.
    textarea.addEventListener('keydown', (e) => {
      if (list.hidden || !items.length) return;
      const stop = () => { e.preventDefault(); e.stopImmediatePropagation(); e.stopPropagation(); };
      if (e.key === 'ArrowDown') { stop(); active = (active + 1) % items.length; draw(); }
      else if (e.key === 'ArrowUp') { stop(); active = (active + items.length - 1) % items.length; draw(); }
      else if ((e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey) || e.key === 'Tab') { stop(); take(active); }
      else if (e.key === 'Escape') { stop(); close(); }
    }, true);
    window.addEventListener('message', (e) => {
      const m = e.data;
      if (m && m.type === 'mentionItems' && m.seq === seq && current()) {
        items = m.items || [];
        active = 0;
        draw();
      }
    });
    return {
      /** Inserts text at the caret (an attached selection), on a line of its own. */
      insert(text) {
        const v = textarea.value;
        const at = textarea.selectionStart ?? v.length;
        const before = v.slice(0, at);
        const pre = before && !before.endsWith('\n') ? '\n' : '';
        textarea.value = before + pre + text + v.slice(at);
        const end = at + pre.length + text.length;
        textarea.setSelectionRange(end, end);
        textarea.focus();
        textarea.dispatchEvent(new Event('input', { bubbles: true }));
      },
    };
  };
})();
