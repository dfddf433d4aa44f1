// The task view: a task in an editor tab (a webview), its conversation from
// task/transcript and its state, with the actions that fit. It fills from
// task/get and task/events when opened (after a window reload too: the
// panel is restored by its serializer) and then follows live.
//
// Everything shown comes from agents and repositories, so the webview's
// script builds the page with textContent only (no HTML from data), under a
// content security policy that allows its own script and style and nothing
// remote.

import * as vscode from 'vscode';
import * as os from 'os';
import type { Host } from './host';
import type { Task, TaskHookNotification, TaskTranscriptNotification } from './protocol';
import { Code } from './protocol';
import { callRow, composeState, header, Item, itemView, personWords, questionCard, Transcript } from './transcript';
import { noAbsolutePaths, taskLabel } from './model';
import { trace } from './ui';
import { forecastFacts } from './queuemodel';
import { loginWords } from './controls';

/** A task's transcript, loaded once from task/events and followed live. */
/** How many rows a task view draws at first, and adds each time the person scrolls up to the first. */
const windowRows = 300;

export class Feed {
  readonly transcript = new Transcript();
  readonly loaded: Promise<void>;
  private readonly listeners = new Set<(it: Item) => void>();
  private loading = true;
  /** How many transcript entries have been applied (the UI test's measure of size). */
  entries = 0;
  private readonly held: (TaskTranscriptNotification | TaskHookNotification)[] = [];

  constructor(private readonly f: Host, readonly id: string) {
    this.loaded = this.load().finally(() => {
      this.loading = false;
      for (const n of this.held.splice(0)) this.live(n);
    });
  }

  private async load() {
    const client = await this.f.whenConnected();
    let since = 0;
    for (;;) {
      const r = await client.request('task/events', { id: this.id, sinceSeq: since, limit: 10000 });
      for (const e of r.events) {
        if (e.method === 'task/transcript' && e.params?.entry && this.transcript.add(e.params.entry, e.seq)) this.entries++;
        this.transcript.alsoChanged();
        // A verbose task's hook calls, where they happened in the conversation.
        if (e.method === 'task/hook' && e.params?.name) this.transcript.hook(e.params, e.seq);
        since = Math.max(since, e.seq);
      }
      if (r.events.length < 10000 || since >= r.lastSeq) break;
    }
  }

  /** A live (or replayed) task/transcript or task/hook of this task. */
  live(n: TaskTranscriptNotification | TaskHookNotification) {
    if (this.loading) {
      this.held.push(n);
      return;
    }
    const it = 'entry' in n ? this.transcript.add(n.entry, n.seq) : this.transcript.hook(n, n.seq);
    if (it) this.entries++;
    for (const x of it ? [it, ...this.transcript.alsoChanged()] : []) for (const l of this.listeners) l(x);
  }

  listen(fn: (it: Item) => void): vscode.Disposable {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }
}

export class TaskViews implements vscode.WebviewPanelSerializer, vscode.Disposable {
  private readonly feeds = new Map<string, Feed>();
  private readonly panels = new Map<string, View>();
  /**
   * The view a tree click opened and nothing since kept: the next click
   * shows its task there, as VS Code's preview editors do, so clicking
   * through 30 tasks does not leave 30 tabs.
   */
  private preview?: View;
  private readonly subs: vscode.Disposable[] = [];
  /**
   * Messages typed in a task view not yet in its conversation, by task: a
   * task/send waits until the agent takes the message (at the end of its
   * turn), and the message shows meanwhile as the person's, saying so.
   */
  private readonly outgoing = new Map<string, Outgoing[]>();
  private sent = 0;
  private readonly outgoingChanged = new vscode.EventEmitter<string>();
  /** The view in front: what Send, Stop, Allow and Deny act on from a key. */
  private active?: View;

  constructor(private readonly f: Host, private readonly extensionUri: vscode.Uri) {
    this.subs.push(vscode.window.registerWebviewPanelSerializer('familiar.task', this), this.outgoingChanged);
  }

  /** A message typed in a task's view (steer: Stop and send, which ends the running turn first). */
  async send(id: string, text: string, steer = false) {
    const o: Outgoing = { key: `out${++this.sent}`, text, state: 'queued', at: Date.now() };
    const list = this.outgoing.get(id) ?? [];
    list.push(o);
    this.outgoing.set(id, list);
    const feed = this.feed(id);
    const before = feed.transcript.items.length;
    this.outgoingChanged.fire(id);
    trace({ ev: 'send', task: id, key: o.key, steer, bytes: text.length });
    try {
      const client = await this.f.whenConnected();
      if (steer) {
        this.f.questions.stopped(id);
        const t = this.f.task(id);
        if (t && (t.status === 'running' || t.status === 'waiting')) {
          await client.request('task/interrupt', { id }).catch((err: any) => {
            // The turn ended meanwhile: the message goes as it is.
            if (err?.code !== Code.FailedPrecondition) throw err;
          });
          // Then the turn's end (up to 30 s): under the PTY driver claude
          // then asks what to do instead, and the message is that answer;
          // sent before, it left that question pending after it.
          await this.until(id, (x) => x.status !== 'running' || !!x.pendingQuestion?.text.startsWith('Interrupted'), 30000);
        }
      }
      // Not started yet: task/send takes a message once the agent is up.
      await this.untilStarted(id);
      const cur = this.f.task(id);
      const q = cur?.pendingQuestion;
      if (q && q.kind === 'question' && q.allowText) {
        // The agent asked in words (or, after a Stop, what to do instead):
        // the message is the answer, as in any chat.
        this.f.questions.hidePrompt(id, q.id);
        await client.request('task/respond', { id, questionId: q.id, text });
      } else {
        const t = await client.request('task/send', { id, text });
        this.f.client?.tasks.set(t.id, t);
      }
      o.state = 'sent';
      trace({ ev: 'sent', task: id, key: o.key, ms: Date.now() - o.at });
      // Already in the conversation (the transcript came before the answer): gone.
      if (feed.transcript.items.slice(before).some((it) => it.kind === 'prompt' && sameWords(it.text ?? '', text))) this.drop(id, o);
    } catch (err: any) {
      o.state = 'failed';
      o.error = String(err?.message ?? err);
      trace({ ev: 'sendFailed', task: id, key: o.key, error: o.error });
      // Said not taken, yet already in the conversation: it was taken.
      if (feed.transcript.items.slice(before).some((it) => it.kind === 'prompt' && sameWords(it.text ?? '', text))) this.drop(id, o);
    }
    this.outgoingChanged.fire(id);
  }

  /** Stop: ends the agent's current turn (task/interrupt); the task stays, the message box takes the next message. */
  async stop(id: string) {
    trace({ ev: 'stop', task: id });
    this.f.questions.stopped(id);
    const client = await this.f.whenConnected();
    const t = await client.request('task/interrupt', { id });
    this.f.client?.tasks.set(t.id, t);
  }

  /** A failed message put away (its words go back into the box). */
  dismiss(id: string, key: string) {
    const o = this.outgoing.get(id)?.find((x) => x.key === key);
    if (o) this.drop(id, o);
  }

  private drop(id: string, o: Outgoing) {
    const list = (this.outgoing.get(id) ?? []).filter((x) => x !== o);
    if (list.length) this.outgoing.set(id, list);
    else this.outgoing.delete(id);
    this.outgoingChanged.fire(id);
  }

  /** A prompt came into a task's conversation: the message it is no longer shows as on its way. */
  private arrived(id: string, it: Item) {
    if (it.kind !== 'prompt') return;
    const list = this.outgoing.get(id);
    if (!list) return;
    // The one with these words (one said not taken may have been taken
    // after all: the PTY driver's check of a keystroke can miss it under
    // load), else the oldest the agent took (a PTY may reflow what was typed).
    const o = list.find((x) => sameWords(x.text, it.text ?? '')) ?? list.find((x) => x.state === 'sent');
    if (o) this.drop(id, o);
  }

  /** Timers of the waits below: stopped with the views. */
  private readonly polls = new Set<NodeJS.Timeout>();

  private poll(ok: () => boolean, everyMs: number, done: () => void) {
    const timer = setInterval(() => {
      if (!ok()) return;
      clearInterval(timer);
      this.polls.delete(timer);
      done();
    }, everyMs);
    this.polls.add(timer);
  }

  /** Until the task is as cond says, or timeoutMs passed (then as it is). */
  private until(id: string, cond: (t: Task) => boolean, timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    const ok = () => { const t = this.f.task(id); return !t || cond(t) || Date.now() > end; };
    if (ok()) return Promise.resolve();
    return new Promise((resolve) => {
      this.poll(ok, 50, resolve);
    });
  }

  /**
   * Until a queued or starting task has its agent (task/send refuses
   * before): at most 10 minutes, then the send goes and says why it failed
   * (a task held in the queue, paused there, would never start).
   */
  private untilStarted(id: string): Promise<void> {
    const until = Date.now() + 600000;
    const ok = () => { const t = this.f.task(id); return !t || (t.status !== 'queued' && t.status !== 'starting') || Date.now() > until; };
    if (ok()) return Promise.resolve();
    return new Promise((resolve) => {
      this.poll(ok, 200, resolve);
    });
  }

  /** What a view shows of its task's outgoing messages. */
  private outgoingView(id: string) {
    const t = this.f.task(id);
    const busy = t && (t.status === 'running' || t.status === 'waiting');
    return (this.outgoing.get(id) ?? []).map((o) => ({
      key: o.key, text: o.text, state: o.state,
      note: o.state === 'failed' ? `Not sent: ${o.error}`
        : o.state === 'sent' ? 'Sent: the agent has it.'
          : busy ? 'Queued: the agent gets it when it finishes its turn.'
            : t && (t.status === 'queued' || t.status === 'starting') ? 'Queued: the agent gets it once it has started.' : 'Sending…',
    }));
  }

  /** The view in front, if it is a task view (the keybindings' target). */
  activeTask(): string | undefined {
    return this.active && !this.active.disposed && this.active.panel.active ? this.active.id : undefined;
  }

  /** Puts the focus in the front task view's message box. */
  focusMessage(id: string) {
    const v = this.panels.get(id);
    if (!v) return false;
    v.panel.reveal(undefined, false);
    void v.panel.webview.postMessage({ type: 'focusMessage' });
    return true;
  }

  dispose() {
    for (const t of this.polls) clearInterval(t);
    for (const s of this.subs) s.dispose();
    for (const p of this.panels.values()) p.panel.dispose();
  }

  /** The feed of a task, loading it the first time (the terminal of a stream task shares it). */
  feed(id: string): Feed {
    let fd = this.feeds.get(id);
    if (!fd) {
      fd = new Feed(this.f, id);
      this.feeds.set(id, fd);
      fd.loaded.catch(() => this.feeds.delete(id));
    }
    return fd;
  }

  /** A task/transcript notification: to the task's feed, if anything follows it. */
  transcript(n: TaskTranscriptNotification) {
    this.feeds.get(n.id)?.live(n);
  }

  /** A task/hook notification (a verbose task's): to the task's feed, if anything follows it. */
  hook(n: TaskHookNotification) {
    this.feeds.get(n.id)?.live(n);
  }

  /** After a reconnect the feeds reload (events may have been missed beyond the replay). */
  forgetAll() {
    this.feeds.clear();
  }

  taskChanged(t: Task) {
    this.panels.get(t.id)?.update(t);
  }

  /** The live transcript's items reach the outgoing messages too (see arrived). */
  private watchArrivals(id: string, feed: Feed): vscode.Disposable {
    return feed.listen((it) => this.arrived(id, it));
  }

  /** Shows a task's view; preview (a tree click) reuses the preview tab and keeps the focus in the tree. */
  async open(id: string, preview = false) {
    const p = this.panels.get(id);
    if (p) {
      p.panel.reveal(undefined, preview);
      if (!preview && p === this.preview) this.preview = undefined;
      return;
    }
    if (preview && this.preview && !this.preview.disposed) {
      const v = this.preview;
      v.detach();
      this.panels.delete(v.id);
      this.attach(v.panel, id, v);
      v.panel.reveal(undefined, true);
      return;
    }
    const t = this.f.task(id);
    const panel = vscode.window.createWebviewPanel('familiar.task', t ? taskLabel(t) : id, { viewColumn: vscode.ViewColumn.Active, preserveFocus: preview }, this.options());
    const v = this.attach(panel, id);
    if (preview) this.preview = v;
  }

  async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: any) {
    const id = typeof state?.id === 'string' ? state.id : undefined;
    if (!id) {
      panel.dispose();
      return;
    }
    panel.webview.options = this.options();
    // Shown at once (a blank tab reads as broken); filled once familiar answers.
    this.attach(panel, id);
  }

  private options(): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'media')], enableFindWidget: true };
  }

  private attach(panel: vscode.WebviewPanel, id: string, reuse?: View): View {
    const opened = Date.now();
    const w = panel.webview;
    const nonce = Array.from({ length: 32 }, () => Math.floor(Math.random() * 36).toString(36)).join('');
    const media = (f: string) => w.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', f));
    w.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${w.cspSource}; script-src 'nonce-${nonce}'; img-src ${w.cspSource};">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${media('taskview.css')}"></head>
<body><div id="head"></div><div id="log" role="log" aria-live="polite"></div><div id="outgoing"></div><div id="card"></div>
<div id="compose"><textarea id="message" rows="3" aria-label="Message to the agent" placeholder="Message the agent: Enter sends, Shift+Enter starts a new line, @ mentions a file or folder"></textarea>
<div class="bar"><button type="button" id="send" class="primary">Send</button><button type="button" id="steer" title="End the agent's turn and send this message now (Ctrl+Enter)">Stop and send</button><button type="button" id="stop" title="End the agent's turn (the task stays)">Stop</button><button type="button" id="attach" class="link" title="Attach the lines selected in the editor">Add Selection</button><span id="composeNote" class="hint"></span></div></div>
<script nonce="${nonce}" src="${media('mentions.js')}"></script>
<script nonce="${nonce}" src="${media('taskview.js')}"></script></body></html>`;
    const subs: vscode.Disposable[] = [];
    let task = this.f.task(id);
    const worktree = () => task?.worktree?.path;
    const feed = this.feed(id);
    const post = (m: any) => void w.postMessage(m);
    // Sent when what it says changed: the countdowns (undo, estimates) move
    // between task/updated, so a timer asks again each second.
    let lastHead = '';
    const sendHead = () => {
      if (!task) return;
      const head: any = header(task, Date.now(), feed.transcript.total, { repo: this.f.root, home: os.homedir() });
      // The conflict forecast, naming the other tasks by title.
      head.facts.push(...forecastFacts(task, (other) => this.f.task(other)?.title));
      // The model it was given, and which login the agents use, in words.
      if (task.model) head.facts.push(['Model', task.model]);
      const login = loginWords(this.f.client?.init?.claude?.auth);
      if (login) head.facts.push(['Login', login]);
      // The question is a card in the conversation, answered there.
      head.question = undefined;
      head.card = task.pendingQuestion ? questionCard(task.pendingQuestion, worktree()) : undefined;
      head.compose = composeState(task);
      head.outgoing = this.outgoingView(id);
      const key = JSON.stringify(head);
      if (key === lastHead) return;
      lastHead = key;
      post({ type: 'head', id, head });
    };
    const ticker = setInterval(() => { if (ready) sendHead(); }, 1000);
    subs.push({ dispose: () => clearInterval(ticker) });
    let ready = false;
    // Where an opening's time goes (the UI test's figure): the page's start, familiar's answers.
    const marks: Record<string, number> = {};
    const update = (t: Task) => {
      const hadWorktree = !!worktree();
      task = t;
      panel.title = taskLabel(t);
      if (ready) sendHead();
      // The rows name files relative to the worktree: drawn before the task was known, they are drawn again.
      if (ready && loaded && !hadWorktree && worktree()) resetItems();
    };
    let loaded = false;
    const person = () => (task ? personWords(task) : undefined);
    // The rows drawn are the last windowRows, and earlier ones a page at a
    // time as the person scrolls up to them: 5,000 entries drawn whole took
    // 835 ms to open (2,503 rows; load 13), where a person reads the end.
    // hidden: the keys of the rows not drawn yet, which live changes skip.
    let hidden = new Set<string>();
    const views = (items: Item[]) => items.map((it) => itemView(it, worktree(), person()));
    const resetItems = () => {
      const all = feed.transcript.items;
      const from = Math.max(0, all.length - windowRows);
      hidden = new Set(all.slice(0, from).map((it) => it.key));
      post({ type: 'reset', items: views(all.slice(from)), earlier: from, window: windowRows });
    };
    const earlier = () => {
      const all = feed.transcript.items;
      let end = 0;
      while (end < all.length && hidden.has(all[end].key)) end++;
      const from = Math.max(0, end - windowRows);
      for (const it of all.slice(from, end)) hidden.delete(it.key);
      post({ type: 'earlier', items: views(all.slice(from, end)), earlier: from });
    };
    // The person follows the end of a long stream (the page asks, at the
    // end, once it holds twice the window): the rows before the last
    // windowRows go back among the earlier ones, put back a page at a time
    // as before. Without it a view left open grew by every call: with
    // 2,500 calls streaming in, the page's layout took a third of a core
    // on the machine the extension host shares (issue 36).
    const trim = () => {
      const all = feed.transcript.items;
      let end = 0;
      while (end < all.length && hidden.has(all[end].key)) end++;
      // Answered even when there is nothing to take: the page asks again only after an answer.
      if (all.length - end <= 2 * windowRows) return post({ type: 'trimmed', keys: [], earlier: end });
      const upTo = all.length - windowRows;
      const gone = all.slice(end, upTo);
      for (const it of gone) hidden.add(it.key);
      // Hook calls stay drawn in their own box, counted there.
      post({ type: 'trimmed', keys: gone.filter((it) => it.kind !== 'hook').map((it) => it.key), earlier: upTo });
    };
    subs.push(this.outgoingChanged.event((tid) => { if (tid === id && ready) sendHead(); }), this.watchArrivals(id, feed));
    subs.push(panel.onDidChangeViewState((e) => { if (e.webviewPanel.active) this.active = view; }));
    const view: View = reuse ?? { id, panel, update, detach: () => undefined, disposed: false };
    if (panel.active) this.active = view;
    view.id = id;
    view.update = update;
    view.detach = () => { for (const s of subs.splice(0)) s.dispose(); };
    this.panels.set(id, view);
    subs.push(w.onDidReceiveMessage(async (m: any) => {
      // A view the person worked in (an action, a diff, a result) is kept, not reused.
      if (m?.type !== 'ready' && m?.type !== 'rendered' && this.preview === view) this.preview = undefined;
      try {
        if (await this.f.mentions.answer(m, (x) => w.postMessage(x))) return;
        switch (m?.type) {
          case 'ready': {
            marks.pageMs = Date.now() - opened;
            // The head shows at once from the task list's copy; task/get
            // fills in what the list leaves out (steps, usage) when it comes,
            // off the transcript's path: waiting for both held the rows
            // back by the slower answer.
            ready = true;
            // A page (re)loaded (a hidden tab's is dropped): it has no head yet.
            lastHead = '';
            sendHead();
            const got = this.f.whenConnected()
              .then((client) => client.request('task/get', { id }))
              .then((t) => { marks.taskGetMs = Date.now() - opened; if (!view.disposed && view.id === id) update(t); })
              .catch(() => undefined);
            await feed.loaded;
            // A view restored by a window reload opens before familiar has
            // listed the tasks: its rows need the task (the worktree that
            // files are named relative to, the person's words for the
            // prompt), so they wait for task/get rather than be drawn with
            // absolute paths.
            if (!task) await got;
            marks.loadedMs = Date.now() - opened;
            loaded = true;
            resetItems();
            // Coalesced: a streaming response changes its text item with
            // every delta; the view gets each changed item at most ten
            // times a second, as it is then.
            const changed = new Map<string, Item>();
            let timer: NodeJS.Timeout | undefined;
            subs.push(feed.listen((it) => {
              changed.set(it.key, it);
              timer ??= setTimeout(() => {
                timer = undefined;
                const items = views([...changed.values()].filter((x) => !hidden.has(x.key)));
                changed.clear();
                post({ type: 'items', items });
              }, 100);
            }), { dispose: () => clearTimeout(timer) });
            return;
          }
          case 'earlier':
            if (loaded) earlier();
            return;
          case 'trim':
            if (loaded) trim();
            return;
          case 'rendered':
            trace({ ev: 'taskview', task: id, items: m.items, entries: feed.entries, ms: Date.now() - opened, ...marks });
            return;
          case 'command':
            if (m.command === 'readSummary') {
              const ref = task?.result?.summaryRef;
              if (ref) await vscode.window.showTextDocument(this.f.texts.put(await this.f.text(id, ref), 'summary.md'), { preview: true });
              return;
            }
            if (typeof m.command === 'string' && /^[a-zA-Z]+$/.test(m.command)) await vscode.commands.executeCommand(`familiar.${m.command}`, id);
            return;
          case 'send':
            if (typeof m.text === 'string' && m.text.trim()) await this.send(id, m.text, !!m.steer);
            return;
          case 'stop':
            await this.stop(id);
            return;
          case 'dismissOutgoing':
            this.dismiss(id, String(m.key));
            return;
          case 'answer':
            await this.f.questions.fromView(id, String(m.questionId), m);
            return;
          case 'copyFact': {
            // The whole of a shortened fact; only the worktree's path has one.
            const p = worktree();
            if (m.name !== 'Worktree' || !p) return;
            await vscode.env.clipboard.writeText(p);
            vscode.window.setStatusBarMessage('$(check) Familiar: copied the worktree\'s path', 3000);
            return;
          }
          case 'openDiff': {
            const it = feed.transcript.items.find((x) => x.key === m.key);
            const d = it?.call?.diffs?.[Number(m.index)];
            if (!d) return;
            const rel = itemView(it!, worktree()).diffs![Number(m.index)].path;
            // The tab's title: the call's title names the file by its absolute path.
            const title = noAbsolutePaths(`${rel}: ${callRow(it!.call!, worktree()).title}`, { worktree: worktree(), repo: this.f.root, home: os.homedir() });
            await this.f.texts.diff(d.oldText, d.newText, rel, title);
            return;
          }
          case 'openResult': {
            const it = feed.transcript.items.find((x) => x.key === m.key);
            const ref = it?.call?.resultRef;
            if (!ref) return;
            const text = await this.f.text(id, ref);
            trace({ ev: 'wholeText', task: id, ref, bytes: Buffer.byteLength(text) });
            await vscode.window.showTextDocument(this.f.texts.put(text, 'result.txt'), { preview: true });
            return;
          }
        }
      } catch (err: any) {
        this.f.fail(err);
      }
    }));
    if (!reuse) {
      panel.onDidDispose(() => {
        view.disposed = true;
        view.detach();
        if (this.panels.get(view.id) === view) this.panels.delete(view.id);
        if (this.preview === view) this.preview = undefined;
      });
    }
    return view;
  }

}

interface Outgoing {
  key: string;
  text: string;
  state: 'queued' | 'sent' | 'failed';
  at: number;
  error?: string;
}

/** The same message, whitespace aside (a terminal reflows what is typed into it). */
function sameWords(a: string, b: string): boolean {
  const n = (s: string) => s.replace(/\s+/g, ' ').trim();
  return n(a) === n(b);
}

interface View {
  id: string;
  panel: vscode.WebviewPanel;
  update: (t: Task) => void;
  detach: () => void;
  disposed: boolean;
}
