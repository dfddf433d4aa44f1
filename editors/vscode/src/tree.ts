// The Tasks view: tasks grouped by where they are, redrawn in coalesced bursts.

import * as vscode from 'vscode';
import type { Host } from './host';
import { describe, estimateOrWhyNot, modeNote, redrawn, rowKey, secondsUntil, GroupId, groups, groupOfTask, plural, taskStatusText, taskLabel, tasksIn, truncate, undoable, undoText } from './model';
import type { Task } from './protocol';
import { statusHoldsWorktree } from './protocol';
import { escapeMd } from './ui';
import { isQueueNode, MergeQueue, QueueNode } from './mergequeue';
import { isPlanNode, Plans, PlanNode } from './plans';
import { forecastLines, forecastSummary, forecastText } from './queuemodel';

export type Node = { kind: 'group'; id: GroupId } | { kind: 'task'; id: string } | QueueNode | PlanNode
  // "Show more…" under a paged group; the search's heading row (history.ts).
  | { kind: 'more'; id: GroupId } | { kind: 'search'; id: string };

/** Finished tasks shown at first, and added by each "Show more…". */
export const pageSize = 50;

/** A search the tree shows instead of its groups (history.ts runs it). */
export interface TreeFilter { label: string; tasks: Task[]; total: number }

export class TaskTree implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | Node[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private pending?: NodeJS.Timeout;
  private last = 0;
  private full = false;
  private readonly dirty = new Set<string>();
  /** Stable element objects: VS Code refreshes single elements by identity. */
  private readonly nodes = new Map<string, Node>();
  /** Where each task was last drawn (group and queue slot): moving it needs a full redraw. */
  private readonly drawn = new Map<string, string>();
  /** What each task's row showed when last drawn: a tick that changes none redraws nothing. */
  private readonly shown = new Map<string, string>();
  /** How many of a finished group's tasks are shown (the latest first). */
  private readonly limits = new Map<GroupId, number>();
  /** Each queued task's place among the queued ones, from the last listing of the group (Move Up/Down). */
  private queueIndex = new Map<string, number>();
  /** The search shown instead of the groups, if any. */
  filter?: TreeFilter;
  /**
   * Until when rows keep their places: for 2 s after the person used the
   * tree (a click on a row, a selection, a group opened or closed), a task
   * that changes group is redrawn where it is and moves after, so the row
   * under the pointer is still the one meant. (An extension is not told
   * where the pointer is: a click is the nearest sign of it.)
   */
  private holdUntil = 0;
  private holdTimer?: NodeJS.Timeout;
  /** Each drawn task's own click command (rowCommand). */
  private readonly clicks = new Map<string, vscode.Disposable>();

  /** queue and plans: the merge queue and the plans, whose rows lead the tree. */
  constructor(private readonly f: Host, private readonly queue: () => MergeQueue, private readonly plans: () => Plans) {}

  dispose() {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    if (this.pending) clearTimeout(this.pending);
    for (const d of this.clicks.values()) d.dispose();
    this.clicks.clear();
  }

  /**
   * The command a click on a task's row runs: one of the task's own, with
   * no arguments. A command with arguments is kept by the extension host
   * under a key that dies with the row's element node, and a row's own
   * refresh replaces that node before the renderer has the new row: a click
   * in between ran the dead key ("Actual command not found", no task view;
   * the load scenario's click under the flood, 30 rows redrawn each second).
   * A command of its own never goes stale, nor needs the row's element
   * (which a whole-tree redraw takes away for a moment) or the selection.
   */
  private rowCommand(id: string): string {
    const name = `familiar.showTask.${id}`;
    if (!this.clicks.has(id)) this.clicks.set(id, vscode.commands.registerCommand(name, () => { this.touched(); return vscode.commands.executeCommand('familiar.showTask', id); }));
    return name;
  }

  /** The person used the tree: rows keep their places for 2 s (see holdUntil). */
  touched() {
    this.holdUntil = Date.now() + 2000;
  }

  /** Redraws everything (soon, coalesced). */
  refresh() {
    this.full = true;
    this.schedule();
  }

  /** Notes a changed task (the next redraw, coalesced, shows it). */
  taskChanged(id: string) {
    const t = this.f.task(id);
    if (!t || this.drawn.get(id) !== place(t)) this.full = true;
    // Dirty either way: while rows hold their places (holdUntil) a moving row is redrawn where it is.
    this.dirty.add(id);
    this.schedule();
  }

  /** Redraws the rows whose elapsed time or countdown moves (an undo's too, and its end takes the Undo item away). */
  tick() {
    for (const id of this.drawn.keys()) {
      const t = this.f.task(id);
      // A passed undo a few seconds on (a tick may be late), not forever.
      if (t && (statusHoldsWorktree(t.status) || (t.status === 'merged' && (secondsUntil(t.undoableUntil, Date.now()) ?? -1) > -5))) this.dirty.add(id);
    }
    if (this.dirty.size) this.schedule();
  }

  /** Shows a search's results instead of the groups (undefined: the groups again). */
  setFilter(f?: TreeFilter) {
    this.filter = f;
    void vscode.commands.executeCommand('setContext', 'familiar.filtered', !!f);
    this.refresh();
  }

  /** "Show more…": the next page of a finished group. */
  showMore(g: GroupId) {
    this.limits.set(g, (this.limits.get(g) ?? pageSize) + pageSize);
    this.refresh();
  }

  /** A task as shown: the live copy, else the search's (an archived task is not in the live list). */
  private taskOf(id: string): Task | undefined {
    return this.f.task(id) ?? this.filter?.tasks.find((t) => t.id === id);
  }

  /**
   * Coalesces bursts (30 agents change activity several times a second) into
   * at most four redraws a second.
   */
  private schedule() {
    if (this.pending) return;
    const wait = Math.max(30, this.last + 250 - Date.now());
    this.pending = setTimeout(() => {
      this.pending = undefined;
      const now = Date.now();
      // Only the rows that would look different: a redraw costs the
      // renderer, and 30 running tasks are dirty every second for their
      // elapsed time.
      const rows = redrawn(this.dirty, (id) => this.f.task(id), this.shown, now);
      let full = this.full || rows === 'all';
      if (full && now < this.holdUntil && rows !== 'all' && this.full && !this.filter) {
        // Rows would move: not while the person is at the tree. Each
        // changed row is redrawn in place now, the move comes when the
        // hold ends.
        full = false;
        if (!this.holdTimer) this.holdTimer = setTimeout(() => { this.holdTimer = undefined; this.schedule(); }, this.holdUntil - now + 10);
      } else this.full = false;
      this.dirty.clear();
      if (!full && !rows.length) return;
      this.last = now;
      // The whole tree only when rows move, come or go. A whole-tree refresh
      // makes VS Code's extension host forget every row's element at once
      // (ExtHostTreeView._addAllToClear) until the tree is listed again, and
      // a menu entry chosen meanwhile reaches its command with no row
      // (extension.ts rowTask: it then does nothing and says so). A row's
      // own refresh swaps its element under the same handle in one step, so
      // no entry loses it; the element is the same object (this.node), the
      // one getChildren returned, which is how VS Code finds the row.
      this.changed.fire(full ? undefined : (rows as string[]).map((id) => this.node('task', id)));
    }, wait);
  }

  private node(kind: Node['kind'], id: string): Node {
    const key = `${kind}:${id}`;
    let n = this.nodes.get(key);
    if (!n) {
      n = { kind, id } as Node;
      this.nodes.set(key, n);
    }
    return n;
  }

  getChildren(n?: Node): Node[] {
    const tasks = this.f.client?.tasks.values() ?? [];
    if (!n) {
      const all = [...tasks];
      for (const id of [...this.drawn.keys()]) {
        if (this.taskOf(id)) continue;
        this.drawn.delete(id);
        this.shown.delete(id);
        this.nodes.delete(`task:${id}`);
        this.clicks.get(id)?.dispose();
        this.clicks.delete(id);
      }
      if (this.filter) return [this.node('search', 'search'), ...this.filter.tasks.map((t) => this.node('task', t.id))];
      // The merge queue, while it runs (and its undo window after), first;
      // then the plans under way (and those that ended in the last half hour).
      return [...this.queue().roots(), ...this.plans().roots(), ...groups.filter((g) => all.some((t) => groupOfTask(t) === g.id)).map((g) => this.node('group', g.id))];
    }
    if (isQueueNode(n)) return this.queue().children(n);
    if (isPlanNode(n)) return this.plans().children(n);
    // A task's conflict forecast is summed up on its row ("conflicts with 2
    // tasks"), listed in its tooltip and its view: rows under each ready
    // task took 2-4 more rows apiece (5 ready tasks, 17 rows).
    if (n.kind === 'task') return [];
    if (n.kind === 'group') {
      const list = tasksIn(n.id, tasks);
      // Once per listing, not once a row: 1,000 queued rows would sort 1,000 times.
      if (n.id === 'queued') this.queueIndex = new Map(list.filter((t) => t.status === 'queued').map((t, i) => [t.id, i]));
      // Finished groups page: a window open for months has thousands.
      if (!paged.includes(n.id)) return list.map((t) => this.node('task', t.id));
      const limit = this.limits.get(n.id) ?? pageSize;
      const shown = list.slice(0, limit).map((t) => this.node('task', t.id));
      return list.length > limit ? [...shown, this.node('more', n.id)] : shown;
    }
    return [];
  }

  getTreeItem(n: Node): vscode.TreeItem {
    const now = Date.now();
    if (isQueueNode(n)) return this.queue().treeItem(n);
    if (isPlanNode(n)) return this.plans().treeItem(n);
    if (n.kind === 'group') {
      const g = groups.find((x) => x.id === n.id)!;
      const count = tasksIn(n.id, this.f.client?.tasks.values() ?? []).length;
      const item = new vscode.TreeItem(`${g.label} (${count})`, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${n.id}`;
      item.contextValue = paged.includes(n.id) ? `group finished` : 'group';
      return item;
    }
    if (n.kind === 'more') {
      const count = tasksIn(n.id, this.f.client?.tasks.values() ?? []).length;
      const left = count - (this.limits.get(n.id) ?? pageSize);
      const item = new vscode.TreeItem('Show more…', vscode.TreeItemCollapsibleState.None);
      item.id = `more:${n.id}`;
      item.description = `${plural(Math.max(0, left), 'older task')}`;
      item.contextValue = 'more';
      item.iconPath = new vscode.ThemeIcon('ellipsis');
      item.command = { command: 'familiar.showMore', title: 'Show More', arguments: [n.id] };
      return item;
    }
    if (n.kind === 'search') {
      const f = this.filter;
      const item = new vscode.TreeItem(f ? f.label : 'Search', vscode.TreeItemCollapsibleState.None);
      item.id = 'search';
      item.iconPath = new vscode.ThemeIcon('search');
      item.description = f ? (f.total > f.tasks.length ? `${f.tasks.length} of ${f.total} shown` : plural(f.tasks.length, 'task')) + ' · click to clear' : '';
      item.contextValue = 'search';
      item.accessibilityInformation = { label: `${item.label}, ${item.description}` };
      item.command = { command: 'familiar.clearSearch', title: 'Clear Search' };
      return item;
    }
    const t = this.taskOf(n.id);
    if (!t) return new vscode.TreeItem('(gone)');
    this.drawn.set(t.id, place(t));
    this.shown.set(t.id, rowKey(t, now));
    const item = new vscode.TreeItem(taskLabel(t), vscode.TreeItemCollapsibleState.None);
    item.id = `task:${t.id}`;
    const titleOf = (id: string) => this.f.task(id)?.title;
    const summary = forecastSummary(t, titleOf);
    item.description = (summary ? `${summary} · ` : '') + modeNote(t) + describe(t, now, true);
    item.iconPath = t.conflicts?.length && ['starting', 'running', 'merging'].includes(t.status)
      ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('notificationsWarningIcon.foreground'))
      : icon(t);
    // A task that changed nothing offers neither Merge nor its changes, whatever its status.
    const none = !!t.result?.noChanges && (t.status === 'merging' || t.status === 'merged');
    const flags = ['task', none ? 'nochanges' : t.status];
    if (!none && t.worktree && ['merging', 'merged', 'blocked', 'cancelled', 'running', 'waiting', 'paused'].includes(t.status)) flags.push('changes');
    if (!none && undoable(t, now)) flags.push('undoable');
    // (Not in a search's flat list: the queue is not listed there.)
    const i = t.status === 'queued' && !this.filter ? this.queueIndex.get(t.id) : undefined;
    if (i !== undefined) {
      // Move Up / Move Down where there is a place to move to (task/reorder).
      if (i > 0) flags.push('up');
      if (i < this.queueIndex.size - 1) flags.push('down');
    }
    if (t.archivedAt) flags.push('archived');
    item.contextValue = flags.join(' ');
    item.command = { command: this.rowCommand(t.id), title: 'Show Details' };
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**${escapeMd(taskLabel(t))}** — ${taskStatusText(t)}\n\n`);
    md.appendText(truncate(t.description, 300) + '\n\n');
    md.appendMarkdown(`${t.type} · ${t.mode} · attempt ${t.attempt}${t.worktree ? ` · \`${t.worktree.branch}\`` : ''}`);
    // What a narrow side bar cuts from the row's end: the estimate, the undo's time.
    const more = [estimateOrWhyNot(t, now), undoable(t, now) ? undoText(t, now, false) : ''].filter(Boolean);
    if (more.length) md.appendMarkdown('\n\n').appendText(more.join(' · '));
    if (t.blocked?.detail) md.appendMarkdown('\n\n').appendText(truncate(t.blocked.detail, 500));
    if (t.result?.summary) md.appendMarkdown('\n\n').appendText(truncate(t.result.summary, 500));
    for (const line of forecastLines(t, titleOf)) md.appendMarkdown('\n\n$(warning) ').appendText(line);
    item.tooltip = md;
    const forecast = forecastText(t, titleOf);
    item.accessibilityInformation = { label: `${taskLabel(t)}, ${taskStatusText(t)}, ${item.description}${forecast ? `, ${forecast}` : ''}` };
    return item;
  }

  getParent(n: Node): Node | undefined {
    if (isQueueNode(n)) return this.queue().parent(n);
    if (isPlanNode(n)) return this.plans().parent(n);
    if (n.kind === 'group') return undefined;
    if (n.kind !== 'task' || this.filter) return undefined;
    const t = this.f.task(n.id);
    return t ? this.node('group', groupOfTask(t)) : undefined;
  }
}

/** The groups of finished tasks, shown a page at a time. */
const paged: GroupId[] = ['done', 'cancelled'];
function place(t: Task): string {
  return `${groupOfTask(t)}/${t.status === 'queued' ? t.queuePosition ?? '' : ''}`;
}

function icon(t: Task): vscode.ThemeIcon {
  const c = (id: string) => new vscode.ThemeColor(id);
  switch (t.status) {
    case 'waiting': return new vscode.ThemeIcon('bell-dot', c('notificationsWarningIcon.foreground'));
    // No spinning icons: each one costs the renderer a style recalculation
    // and a repaint 20 times a second, and with 30 running tasks that was
    // most of its main thread (UI load test), delaying every click.
    case 'starting': return new vscode.ThemeIcon('rocket');
    case 'running':
      return new vscode.ThemeIcon(t.activity === 'running_command' ? 'terminal' : t.activity === 'writing' ? 'edit' : 'pulse', c('charts.blue'));
    case 'paused': return new vscode.ThemeIcon('debug-pause');
    case 'queued': return new vscode.ThemeIcon('clock');
    case 'merging': return t.result?.noChanges ? new vscode.ThemeIcon('check') : new vscode.ThemeIcon('git-pull-request', c('charts.green'));
    case 'merged': return new vscode.ThemeIcon('check', c('charts.green'));
    case 'blocked': return new vscode.ThemeIcon('error', c('errorForeground'));
    case 'cancelled': return new vscode.ThemeIcon('circle-slash');
  }
}
