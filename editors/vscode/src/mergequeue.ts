// The merge queue's face (issue 25): Merge All Ready… (which tasks, in what
// order, how, checked by what), the queue's progress at the top of the Tasks
// view, Cancel Queue and Undo Queue, and one notification when it ends. The
// words are queuemodel.ts's.

import * as vscode from 'vscode';
import type { Host } from './host';
import type { MergeStrategy, Queue, QueueItem, Task } from './protocol';
import { Code } from './protocol';
import { plural, truncate } from './model';
import { forecastText, plainQueueError, queueEndNotice, queueItemText, queueReason, queueStateText, readyInQueueOrder } from './queuemodel';
import { error, info, trace, warn } from './ui';

/**
 * The tree rows this module draws: the queue's group row, a row per task in
 * it, the why of a task it handed back or set aside (a row of its own: a
 * description that long is cut in a side bar). A task's conflict forecast
 * is on its own row (tree.ts, forecastSummary), with no rows of its own.
 */
export type QueueNode =
  | { kind: 'queue'; id: string }
  | { kind: 'queueItem'; id: string }
  | { kind: 'queueWhy'; id: string };

export function isQueueNode(n: { kind: string }): n is QueueNode {
  return n.kind === 'queue' || n.kind === 'queueItem' || n.kind === 'queueWhy';
}

const strategies: { strategy: MergeStrategy; label: string; detail: string }[] = [
  { strategy: 'merge', label: 'Merge', detail: 'Each task\'s commits kept; the base branch gets a merge commit per task.' },
  { strategy: 'squash', label: 'Squash', detail: 'Each task\'s changes as one commit.' },
  { strategy: 'rebase', label: 'Rebase', detail: 'Each task\'s commits replayed on top of the base branch: a linear history.' },
];

export class MergeQueue implements vscode.Disposable {
  /** Queues whose end was announced (or was over before this window saw it). */
  private readonly announced = new Set<string>();
  /** Ended queues the person put away from the view. */
  private readonly dismissed = new Set<string>();
  private expiry?: NodeJS.Timeout;
  private readonly nodes = new Map<string, QueueNode>();

  constructor(private readonly f: Host) {}

  dispose() {
    if (this.expiry) clearTimeout(this.expiry);
  }

  private get queue(): Queue | undefined {
    return this.f.client?.queue;
  }

  /** The task list was (re)loaded: a queue that ended before is not news. */
  loaded() {
    const q = this.queue;
    if (q && q.state !== 'running') this.announced.add(q.id);
    this.scheduleExpiry();
  }

  /** A queue/updated: the view follows; its end is announced once. */
  updated(q: Queue) {
    trace({ ev: 'queue', id: q.id, state: q.state, items: q.items.map((i) => `${i.title}:${i.state}`) });
    this.f.tree.refresh();
    if ((q.state === 'done' || q.state === 'cancelled') && !this.announced.has(q.id)) {
      this.announced.add(q.id);
      // A plan's merges are the plan's to announce (and Undo Plan's to take back).
      if (!q.items.every((i) => this.f.plans.contains(i.taskId))) void this.announce(q);
    }
    this.scheduleExpiry();
  }

  /**
   * Whether the running queue has the task in hand: its "ready to merge"
   * after a hand-back is the queue's business, not a notification's (it
   * offered Merge… for a task the queue was about to merge).
   */
  takes(id: string): boolean {
    const q = this.queue;
    return q?.state === 'running' && q.items.some((i) => i.taskId === id && ['waiting', 'updating', 'verifying', 'merging', 'handedBack'].includes(i.state));
  }

  /** Whether the view shows the queue: while it runs, and after until its undo window passes or it is dismissed. */
  shown(): Queue | undefined {
    const q = this.queue;
    if (!q || this.dismissed.has(q.id)) return undefined;
    if (q.state === 'running') return q;
    const end = q.endedAt ? Date.parse(q.endedAt) : NaN;
    if (q.state === 'undone' || isNaN(end)) return undefined;
    return Date.now() - end < this.undoWindowMs() ? q : undefined;
  }

  /** The undo window familiar was given (the setting, sent at connect), for how long an ended queue stays. */
  private undoWindowMs(): number {
    return vscode.workspace.getConfiguration('familiar').get<number>('undoWindowSec', this.f.undoWindowSec) * 1000;
  }

  /** The view drops an ended queue when its undo window passes. */
  private scheduleExpiry() {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = undefined;
    const q = this.queue;
    if (!q?.endedAt || q.state === 'running') return;
    const left = Date.parse(q.endedAt) + this.undoWindowMs() - Date.now();
    if (left > 0) this.expiry = setTimeout(() => this.f.tree.refresh(), Math.min(left + 500, 2 ** 31 - 1));
  }

  // ---- tree rows ----

  node(kind: 'queue' | 'queueItem' | 'queueWhy', id: string): QueueNode {
    const key = `${kind}:${id}`;
    const n = this.nodes.get(key) ?? { kind, id };
    this.nodes.set(key, n);
    return n;
  }

  /** The row above n among this module's rows. */
  parent(n: QueueNode): QueueNode | undefined {
    if (n.kind === 'queueItem') return this.roots()[0];
    if (n.kind === 'queueWhy') return this.node('queueItem', n.id);
    return undefined;
  }

  /** The queue's group row (at the top of the tree), if shown. */
  roots(): QueueNode[] {
    const q = this.shown();
    return q ? [this.node('queue', q.id)] : [];
  }

  children(n: QueueNode): QueueNode[] {
    const q = this.shown();
    if (!q) return [];
    if (n.kind === 'queue' && q.id === n.id) return q.items.map((it) => this.node('queueItem', it.taskId));
    if (n.kind === 'queueItem') return whyOf(q, q.items.find((i) => i.taskId === n.id)) ? [this.node('queueWhy', n.id)] : [];
    return [];
  }

  treeItem(n: QueueNode): vscode.TreeItem {
    const q = this.queue;
    if (!q) return new vscode.TreeItem('(gone)');
    if (n.kind === 'queue') {
      const item = new vscode.TreeItem('Merge queue', vscode.TreeItemCollapsibleState.Expanded);
      item.id = `queue:${q.id}`;
      // Short: a side bar cuts a long description. The base is in the tooltip.
      item.description = `${q.state} · ${q.items.filter((i) => i.state === 'merged').length}/${q.items.length} merged`;
      const merged = q.items.some((i) => i.state === 'merged');
      item.contextValue = ['queue', q.state === 'running' ? 'running' : 'ended', q.state !== 'running' && merged ? 'undoable' : ''].filter(Boolean).join(' ');
      item.iconPath = new vscode.ThemeIcon(q.state === 'running' ? 'git-merge' : 'checklist');
      const md = new vscode.MarkdownString(undefined, true);
      md.appendText(`Merge queue into ${q.baseRef}: ${queueStateText(q)}. Strategy ${q.strategy}; ${q.verify ? `each task checked with: ${q.verify}` : 'no verify command'}.`);
      item.tooltip = md;
      item.accessibilityInformation = { label: `Merge queue, ${queueStateText(q)}` };
      return item;
    }
    const it = q.items.find((i) => i.taskId === n.id);
    if (!it) return new vscode.TreeItem('(gone)');
    if (n.kind === 'queueWhy') {
      const why = whyOf(q, it) ?? '';
      const w = new vscode.TreeItem(why, vscode.TreeItemCollapsibleState.None);
      w.id = `queueWhy:${q.id}:${it.taskId}`;
      w.tooltip = it.detail ? `${why}\n\n${truncate(it.detail, 500)}` : why;
      w.iconPath = new vscode.ThemeIcon(it.reason === 'verify' ? 'beaker' : it.reason === 'conflict' ? 'git-compare' : 'info');
      w.command = { command: 'familiar.showTask', title: 'Show Task', arguments: [it.taskId] };
      w.accessibilityInformation = { label: `${it.title}: ${why}` };
      return w;
    }
    const t = this.f.task(it.taskId);
    const why = whyOf(q, it);
    const item = new vscode.TreeItem(t?.title ?? it.title, why ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    // A new id when the why row comes: under the old one VS Code kept the
    // collapsed state of a row without children, hiding it.
    item.id = `queueItem:${q.id}:${it.taskId}${why ? `:why${it.attempts}` : ''}`;
    const text = queueItemText(it, q.baseRef);
    const short = shortStep(it, q.baseRef);
    const current = q.state === 'running' && q.current === it.taskId;
    item.description = short + (it.attempts > 1 && it.state !== 'handedBack' && it.state !== 'blocked' ? ` · try ${it.attempts}` : '');
    item.iconPath = itemIcon(it, current);
    item.contextValue = 'queueItem';
    item.command = { command: 'familiar.showTask', title: 'Show Task', arguments: [it.taskId] };
    const md = new vscode.MarkdownString(undefined, true);
    md.appendText(`${it.title}: ${text}`);
    if (it.detail) md.appendMarkdown('\n\n').appendText(truncate(it.detail, 500));
    if (it.output) md.appendMarkdown('\n\n').appendCodeblock(it.output.slice(-1500), 'text');
    for (const hb of it.handBacks ?? []) md.appendMarkdown('\n\n').appendText(`Went back to its agent: ${hb.detail ?? hb.reason}`);
    item.tooltip = md;
    // Not "<title>, …": that is how the task's own row is found (and read).
    item.accessibilityInformation = { label: `In the merge queue: ${t?.title ?? it.title}, ${text}` };
    return item;
  }

  // ---- commands ----

  /** Merge All Ready…: which tasks, in what order, how, checked by what; then queue/merge. */
  async mergeAllReady() {
    const client = this.f.connected();
    if (this.queue?.state === 'running') {
      const pick = await warn('Familiar: a merge queue is already running; it takes the tasks one at a time.', 'Cancel Queue');
      if (pick) await this.cancel();
      return;
    }
    const ready = readyInQueueOrder(client.tasks.values());
    if (!ready.length) {
      void info('Familiar: no task is ready to merge.');
      return;
    }
    const steps = ready.length > 1 ? 4 : 3;
    let step = 1;
    let chosen: Task[] = ready;
    if (ready.length > 1) {
      const titleOf = (id: string) => this.f.task(id)?.title;
      const items = ready.map((t) => ({
        label: t.title,
        description: [plural(t.result?.changedFiles.length ?? 0, 'file') + ' changed', forecastText(t, titleOf)].filter(Boolean).join(' · '),
        picked: true,
        task: t,
      }));
      const picked = await vscode.window.showQuickPick(items, {
        title: `Merge All Ready (${step++}/${steps}): the tasks, in priority order`,
        placeHolder: 'Uncheck the tasks to leave out',
        canPickMany: true,
        ignoreFocusOut: true,
      });
      if (!picked?.length) return;
      chosen = ready.filter((t) => picked.some((p) => p.task === t));
      if (chosen.length > 1) {
        const order = await this.chooseOrder(chosen, step++, steps);
        if (!order) return;
        chosen = order;
      } else step++;
    }
    const preferred = vscode.workspace.getConfiguration('familiar').get<MergeStrategy>('mergeStrategy', 'merge');
    const base = chosen[0].worktree?.baseRef ?? 'the base branch';
    const sItems = [...strategies].sort((a, b) => (a.strategy === preferred ? -1 : b.strategy === preferred ? 1 : 0))
      .map((s) => ({ ...s, description: s.strategy === preferred ? '(your setting)' : undefined }));
    const strategy = await vscode.window.showQuickPick(sItems, { title: `Merge All Ready (${step++}/${steps}): how each task goes into ${base}`, ignoreFocusOut: true });
    if (!strategy) return;
    const st = await client.request('queue/status', {}).catch(() => undefined);
    const verify = await vscode.window.showInputBox({
      title: `Merge All Ready (${step++}/${steps}): the check before each merge`,
      prompt: `A command run in each task's worktree once ${base} is merged into it; only a task it passes for (exit 0) is merged. Empty: no check.`,
      placeHolder: 'e.g. make test',
      value: st?.defaultVerify ?? '',
      ignoreFocusOut: true,
    });
    if (verify === undefined) return;
    let q: Queue;
    try {
      q = await client.request('queue/merge', { ids: chosen.map((t) => t.id), strategy: strategy.strategy, verify: verify.trim() });
    } catch (err: any) {
      const msg = plainQueueError(err?.message ?? String(err), this.f.root);
      this.f.log.warn(`queue/merge: ${err?.message ?? err}`);
      if (err?.code === Code.FailedPrecondition && /running/.test(msg)) {
        const pick = await warn(`Familiar: the merge queue did not start: ${msg}`, 'Cancel Queue');
        if (pick) await this.cancel();
        return;
      }
      // The reason first: a stacked notification shows its first line only;
      // and a button, without which VS Code shows only the first line at all.
      const pick = await error(`Familiar: the merge queue did not start: ${msg} Nothing was merged.`, 'Try Again');
      if (pick) await this.mergeAllReady();
      return;
    }
    client.queue = q;
    this.updated(q);
    // The queue's rows are at the top of the Tasks view: show it.
    void vscode.commands.executeCommand('familiar.tasks.focus');
    vscode.window.setStatusBarMessage(`$(git-merge) Familiar: merging ${plural(q.items.length, 'task')} into ${q.baseRef}, one at a time`, 5000);
  }

  /**
   * The order: as listed (priority), or chosen one task at a time ("which
   * goes first?" among those left), the simplest way a quick pick can.
   */
  private async chooseOrder(tasks: Task[], step: number, steps: number): Promise<Task[] | undefined> {
    const keep = await vscode.window.showQuickPick([
      { label: 'As listed', detail: tasks.map((t) => t.title).join(' → '), keep: true },
      { label: 'Choose the order…', detail: 'Pick which task goes first, then second, and so on.', keep: false },
    ], { title: `Merge All Ready (${step}/${steps}): the order`, ignoreFocusOut: true });
    if (!keep) return undefined;
    if (keep.keep) return tasks;
    const left = [...tasks];
    const order: Task[] = [];
    while (left.length > 1) {
      const next = await vscode.window.showQuickPick(left.map((t) => ({ label: t.title, task: t })), {
        title: `Merge All Ready (${step}/${steps}): which goes ${ordinal(order.length + 1)}?`,
        placeHolder: order.length ? `So far: ${order.map((t) => t.title).join(' → ')}` : undefined,
        ignoreFocusOut: true,
      });
      if (!next) return undefined;
      order.push(next.task);
      left.splice(left.indexOf(next.task), 1);
    }
    return [...order, ...left];
  }

  async cancel() {
    const q = await this.f.connected().request('queue/cancel', {});
    vscode.window.setStatusBarMessage('$(check) Familiar: the merge queue stops after its current step', 5000);
    this.f.log.info(`queue ${q.id} cancelled`);
  }

  async undo() {
    const q = this.queue;
    const merged = q?.items.filter((i) => i.state === 'merged') ?? [];
    if (q && merged.length) {
      const pick = await warn(`Undo the merge queue? ${plural(merged.length, 'merge')} into ${q.baseRef} ${merged.length === 1 ? 'is' : 'are'} taken back, the last first; the tasks stay ready to merge.`, { modal: true }, 'Undo Queue');
      if (!pick) return;
    }
    try {
      const u = await this.f.connected().request('queue/undo', {});
      this.f.client!.queue = u;
      this.f.tree.refresh();
      // familiar's own warning says it, with where the work is kept and what
      // an undo cannot take back: a second notification would repeat it.
      vscode.window.setStatusBarMessage(`$(check) Familiar: the merge queue is undone; ${u.baseRef} is back where it was`, 8000);
    } catch (err: any) {
      void error(`Familiar: ${plainQueueError(err?.message ?? String(err), this.f.root)}`);
    }
  }

  dismiss() {
    const q = this.queue;
    if (q && q.state !== 'running') this.dismissed.add(q.id);
    this.f.tree.refresh();
  }

  /** The one notification at a queue's end. */
  private async announce(q: Queue) {
    const n = queueEndNotice(q);
    trace({ ev: 'queueEnd', id: q.id, text: n.text });
    this.f.log.info(n.text);
    const pick = await (n.level === 'warning' ? warn : info)(n.text, ...n.actions);
    if (pick === 'Undo Queue') await this.undo().catch((err) => this.f.fail(err));
  }
}

/** Why a task went back or was set aside, for the row under it; undefined when it did not. */
function whyOf(q: Queue, it?: QueueItem): string | undefined {
  if (!it) return undefined;
  if (it.state === 'handedBack' || it.state === 'blocked') return queueReason(it.reason, it.files, q.baseRef);
  if (it.state === 'cancelled' && it.detail) return truncate(it.detail, 120);
  return undefined;
}

/** A queue item's step in a few words: the why goes on the row under it. */
function shortStep(it: QueueItem, baseRef: string): string {
  switch (it.state) {
    case 'handedBack': return 'back to its agent';
    case 'blocked': return 'set aside';
    case 'cancelled': return 'not merged';
    default: return queueItemText(it, baseRef);
  }
}

function itemIcon(it: QueueItem, current: boolean): vscode.ThemeIcon {
  const c = (id: string) => new vscode.ThemeColor(id);
  switch (it.state) {
    case 'waiting': return new vscode.ThemeIcon('clock');
    case 'updating': return new vscode.ThemeIcon('repo-pull', current ? c('charts.blue') : undefined);
    case 'verifying': return new vscode.ThemeIcon('beaker', current ? c('charts.blue') : undefined);
    case 'merging': return new vscode.ThemeIcon('git-merge', c('charts.blue'));
    case 'merged': return new vscode.ThemeIcon('check', c('charts.green'));
    case 'handedBack': return new vscode.ThemeIcon('reply', c('notificationsWarningIcon.foreground'));
    case 'blocked': return new vscode.ThemeIcon('error', c('errorForeground'));
    case 'undone': return new vscode.ThemeIcon('discard');
    default: return new vscode.ThemeIcon('circle-slash');
  }
}

function ordinal(n: number): string {
  return ['first', 'second', 'third', 'fourth', 'fifth'][n - 1] ?? `number ${n}`;
}
