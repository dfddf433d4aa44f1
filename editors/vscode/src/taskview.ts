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
import type { Familiar } from './extension';
import type { Task, TaskEventsResult, TaskHookNotification, TaskTranscriptNotification } from './protocol';
import { callRow, header, Item, itemView, Transcript } from './transcript';
import { noAbsolutePaths, taskLabel } from './model';
import { trace } from './ui';
import { forecastFacts } from './queuemodel';

/** A task's transcript, loaded once from task/events and followed live. */
export class Feed {
  readonly transcript = new Transcript();
  readonly loaded: Promise<void>;
  private readonly listeners = new Set<(it: Item) => void>();
  private loading = true;
  /** How many transcript entries have been applied (the UI test's measure of size). */
  entries = 0;
  private readonly held: (TaskTranscriptNotification | TaskHookNotification)[] = [];

  constructor(private readonly f: Familiar, readonly id: string) {
    this.loaded = this.load().finally(() => {
      this.loading = false;
      for (const n of this.held.splice(0)) this.live(n);
    });
  }

  private async load() {
    const client = await this.f.whenConnected();
    let since = 0;
    for (;;) {
      const r = await client.request<TaskEventsResult>('task/events', { id: this.id, sinceSeq: since, limit: 10000 });
      for (const e of r.events) {
        if (e.method === 'task/transcript' && e.params?.entry && this.transcript.add(e.params.entry, e.seq)) this.entries++;
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
    if (it) for (const l of this.listeners) l(it);
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

  constructor(private readonly f: Familiar, private readonly extensionUri: vscode.Uri) {
    this.subs.push(vscode.window.registerWebviewPanelSerializer('familiar.task', this));
  }

  dispose() {
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
<body><div id="head"></div><div id="log" role="log" aria-live="polite"></div>
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
      const head = header(task, Date.now(), feed.transcript.total, { repo: this.f.root, home: os.homedir() });
      // The conflict forecast, naming the other tasks by title.
      head.facts.push(...forecastFacts(task, (other) => this.f.task(other)?.title));
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
      task = t;
      panel.title = taskLabel(t);
      if (ready) sendHead();
    };
    const view: View = reuse ?? { id, panel, update, detach: () => undefined, disposed: false };
    view.id = id;
    view.update = update;
    view.detach = () => { for (const s of subs.splice(0)) s.dispose(); };
    this.panels.set(id, view);
    subs.push(w.onDidReceiveMessage(async (m: any) => {
      // A view the person worked in (an action, a diff, a result) is kept, not reused.
      if (m?.type !== 'ready' && m?.type !== 'rendered' && this.preview === view) this.preview = undefined;
      try {
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
            void this.f.whenConnected()
              .then((client) => client.request<Task>('task/get', { id }))
              .then((t) => { marks.taskGetMs = Date.now() - opened; if (!view.disposed && view.id === id) update(t); })
              .catch(() => undefined);
            await feed.loaded;
            marks.loadedMs = Date.now() - opened;
            post({ type: 'reset', items: feed.transcript.items.map((it) => itemView(it, worktree())) });
            // Coalesced: a streaming response changes its text item with
            // every delta; the view gets each changed item at most ten
            // times a second, as it is then.
            const changed = new Map<string, Item>();
            let timer: NodeJS.Timeout | undefined;
            subs.push(feed.listen((it) => {
              changed.set(it.key, it);
              timer ??= setTimeout(() => {
                timer = undefined;
                const items = [...changed.values()].map((x) => itemView(x, worktree()));
                changed.clear();
                post({ type: 'items', items });
              }, 100);
            }), { dispose: () => clearTimeout(timer) });
            return;
          }
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

interface View {
  id: string;
  panel: vscode.WebviewPanel;
  update: (t: Task) => void;
  detach: () => void;
  disposed: boolean;
}
