// Finished tasks: the archive (Remove takes the row away, Clear Finished in
// bulk, Show Archived to bring some back) and the history's search, shown
// as a filter on the tree. Paging of the finished groups is the tree's
// (tree.ts, "Show more…").

import * as vscode from 'vscode';
import type { Host } from './host';
import type { Task } from './protocol';
import { groupOfTask, plainText, plural, taskLabel, taskStatusText, truncate } from './model';
import { info } from './ui';
import { parseRange, Range, ranges } from './lists';

/** At most this many search results are shown (task/list's largest page). */
const searchLimit = 200;

export class History {
  constructor(private readonly f: Host) {}

  /**
   * Search Tasks…: words (title, description, summary, error) and a date
   * range, through task/list; the tree shows what it finds, archived tasks
   * included, until the search is cleared.
   */
  async search() {
    const client = await this.f.whenConnected();
    const query = await vscode.window.showInputBox({
      title: 'Search Tasks (1/2)', prompt: 'Words in a task\'s title, description, summary or error (empty: every task)',
      value: this.lastQuery, ignoreFocusOut: true,
    });
    if (query === undefined) return;
    const picks: (vscode.QuickPickItem & { range?: Range })[] = [
      ...ranges(new Date()).map((r) => ({ label: r.label, range: r })),
      { label: 'Between dates…', detail: 'A day, or a range such as 2026-11-01..2026-11-20' },
    ];
    const pick = await vscode.window.showQuickPick(picks, { title: 'Search Tasks (2/2): created when?', ignoreFocusOut: true });
    if (!pick) return;
    let range = pick.range;
    if (!range) {
      const typed = await vscode.window.showInputBox({
        title: 'Search Tasks: between dates', prompt: 'A day (2026-11-20) or a range (2026-11-01..2026-11-20)', ignoreFocusOut: true,
        validateInput: (v) => { const r = parseRange(v); return typeof r === 'string' ? r : undefined; },
      });
      if (typed === undefined) return;
      const r = parseRange(typed);
      if (typeof r === 'string') throw new Error(r);
      range = r;
    }
    this.lastQuery = query;
    const r = await client.request('task/list', {
      query: query.trim() || undefined, since: range.since, until: range.until, archived: 'include', limit: searchLimit,
    });
    const words = query.trim() ? `"${truncate(query.trim(), 40)}"` : 'Every task';
    this.f.tree.setFilter({ label: `${words}${range.since || range.until ? ` · ${range.label.toLowerCase()}` : ''}`, tasks: r.tasks, total: r.total });
    await vscode.commands.executeCommand('workbench.view.extension.familiar');
  }

  private lastQuery = '';

  clearSearch() {
    this.f.tree.setFilter(undefined);
  }

  /**
   * Clear Finished: every merged or cancelled task, and the ones done with
   * nothing to merge, go to the archive (task/archive): their rows go, the
   * store keeps them, Show Archived brings them back.
   */
  async clearFinished() {
    const client = await this.f.whenConnected();
    const done = [...client.tasks.values()].filter((t) => ['done', 'cancelled'].includes(groupOfTask(t)));
    if (!done.length) {
      void info('Familiar: no finished tasks to clear.');
      return;
    }
    const ids = done.map((t) => t.id);
    const r = await client.request('task/archive', { ids, finishedBefore: new Date().toISOString() });
    this.dropArchived(r.ids);
    vscode.window.setStatusBarMessage(`$(check) Familiar: archived ${plural(r.ids.length, 'finished task')}`, 4000);
  }

  /** Show Archived: the archive, newest first; the ones picked are shown again. */
  async showArchived() {
    const client = await this.f.whenConnected();
    const r = await client.request('task/list', { archived: 'only', limit: searchLimit });
    if (!r.tasks.length) {
      void info('Familiar: the archive is empty.');
      return;
    }
    const items = r.tasks.map((t) => ({
      label: taskLabel(t),
      // "done, no changes" as the tree says it; the summary as the plain words it stands for.
      description: `${taskStatusText(t)} · ${day(t.finishedAt ?? t.createdAt)}`,
      detail: truncate(plainText(t.result?.summary || t.description), 120),
      id: t.id,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: r.total > r.tasks.length ? `Archived tasks (the latest ${r.tasks.length} of ${r.total})` : `Archived tasks (${r.tasks.length})`,
      placeHolder: 'Pick the tasks to show again, then press Enter',
      canPickMany: true, matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true,
    });
    if (!picked?.length) return;
    const res = await client.request('task/archive', { ids: picked.map((p) => p.id), unarchive: true });
    // task/updated brings them back too; the list now saves waiting for it.
    for (const t of r.tasks) if (res.ids.includes(t.id) && !client.tasks.has(t.id)) client.tasks.set(t.id, { ...t, archivedAt: undefined });
    this.f.tree.refresh();
    vscode.window.setStatusBarMessage(`$(check) Familiar: ${plural(res.ids.length, 'task')} shown again`, 4000);
  }

  /** Takes archived tasks out of the live list (their task/updated does too, when it comes). */
  dropArchived(ids: string[]) {
    for (const id of ids) {
      this.f.client?.tasks.delete(id);
      this.f.ends.forget(id);
    }
    this.f.tree.refresh();
    this.f.updateStatus();
  }
}

function day(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' });
}

/** Whether a task is archived (task/updated carries archivedAt). */
export function archived(t: Task): boolean {
  return !!t.archivedAt;
}
