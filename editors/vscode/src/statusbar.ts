// The status bar's counts (running, waiting with the first question's
// countdown, queued, to merge, blocked), the tree's badge, and the ticker
// that moves elapsed times, countdowns and estimates once a second.

import * as vscode from 'vscode';
import type { Host } from './host';
import { clock, counts, plural, secondsLeft, secondsUntil } from './model';
import { statusHoldsWorktree } from './protocol';

/** What the ticker redraws each second besides the status bar. */
export interface Ticking {
  /** The tree's elapsed times and countdowns. */
  tick(): void;
  /** The question notifications up (their countdowns). */
  readonly prompts: ReadonlyMap<string, { tick?: () => void }>;
  /** A task's details document, redrawn. */
  detailsChanged(id: string): void;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('familiar.status', vscode.StatusBarAlignment.Left, 50);
  private ticker?: NodeJS.Timeout;
  private timer?: NodeJS.Timeout;
  /** The task tree's view, for its badge. */
  view?: vscode.TreeView<unknown>;

  constructor(private readonly f: Pick<Host, 'client'>, private readonly ticking: Ticking) {
    this.item.name = 'Familiar';
    this.item.command = 'workbench.view.extension.familiar';
  }

  /** Says a state of the window's start (no folder, no familiar, not a repository…). */
  say(text: string) {
    this.item.text = text;
    this.item.show();
  }

  startTicking() {
    this.ticker ??= setInterval(() => this.tick(), 1000);
  }

  dispose() {
    if (this.ticker) clearInterval(this.ticker);
    if (this.timer) clearTimeout(this.timer);
    this.item.dispose();
  }

  update() {
    const s = this.item;
    const c = this.f.client;
    if (!c) return;
    if (c.state === 'connecting' || c.state === 'disconnected') {
      s.text = c.state === 'connecting' && c.reconnects === 0 && !c.init ? '$(loading~spin) Familiar' : '$(debug-disconnect) Familiar: reconnecting…';
      s.backgroundColor = c.state === 'disconnected' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
      s.tooltip = 'Familiar: connecting to familiar';
      s.show();
      return;
    }
    const n = counts(c.tasks.values());
    const parts = [`$(hubot) ${n.running} running`];
    if (n.waiting) {
      const q = this.nextExpiring();
      parts.push(`$(bell) ${n.waiting} waiting${q ? ` (${clock(q)})` : ''}`);
    }
    if (n.queued) parts.push(`$(clock) ${n.queued} queued`);
    if (n.ready) parts.push(`$(git-pull-request) ${n.ready} to merge`);
    // A blocked task waits on the person too (Continue, Retry): it stays counted until they act.
    if (n.blocked) parts.push(`$(error) ${n.blocked} blocked`);
    s.text = parts.join('  ');
    s.backgroundColor = n.waiting ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    s.tooltip = `Familiar: ${n.running} running, ${n.waiting} waiting on you, ${n.queued} queued, ${n.ready} ready to merge, ${n.blocked} blocked`;
    s.show();
    if (this.view) this.view.badge = n.waiting ? { value: n.waiting, tooltip: `${plural(n.waiting, 'task')} waiting on you` } : undefined;
  }

  /** update, at most four times a second. */
  soon() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.update();
    }, 250);
  }

  /** Seconds until the first pending question times out. */
  private nextExpiring(): number | undefined {
    let min: number | undefined;
    for (const t of this.f.client?.tasks.values() ?? []) {
      const e = t.pendingQuestion?.expiresAt;
      if (!e) continue;
      const left = secondsLeft(e, Date.now());
      if (left !== undefined && (min === undefined || left < min)) min = left;
    }
    return min;
  }

  private tick() {
    const c = this.f.client;
    if (!c) return;
    let live = false;
    let counting = false;
    for (const t of c.tasks.values()) {
      // Queued or at work: its elapsed time and estimate move.
      if (statusHoldsWorktree(t.status)) live = true;
      // An undo's countdown, and its end takes the Undo item away.
      else if (t.status === 'merged' && (secondsUntil(t.undoableUntil, Date.now()) ?? -1) > -5) counting = true;
    }
    if (live || counting) this.ticking.tick();
    if (live || this.ticking.prompts.size) this.update();
    for (const p of this.ticking.prompts.values()) p.tick?.();
    // A details document in view shows elapsed time and countdowns too.
    for (const e of vscode.window.visibleTextEditors) {
      const uri = e.document.uri;
      if (uri.scheme !== 'familiar-task') continue;
      const t = c.tasks.get(uri.path.split('/')[1]);
      if (t && statusHoldsWorktree(t.status)) this.ticking.detailsChanged(t.id);
    }
  }
}
