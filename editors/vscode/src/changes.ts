// A task's changes: the diff editor's two sides, merge and undo.

import * as vscode from 'vscode';
import * as path from 'path';
import type { Host } from './host';
import { applyPatch, filePatch } from './patch';
import { duration, plural, secondsUntil } from './model';
import type { MergeStrategy, Task, TaskDiffResult } from './protocol';
import { Code } from './protocol';
import { error, gitShow, info } from './ui';

/**
 * Serves both sides of a task's diff: familiar-diff://<id>/<path>?base is the
 * file at the task's base commit, ?head is that plus the hunks task/diff
 * reports for it.
 */
export class DiffProvider implements vscode.TextDocumentContentProvider {
  private readonly cache = new Map<string, { at: number; diff: Promise<TaskDiffResult> }>();

  constructor(private readonly f: Host) {}

  load(id: string): Promise<TaskDiffResult> {
    const c = this.cache.get(id);
    if (c && Date.now() - c.at < 5000) return c.diff;
    const diff = this.f.connected().request('task/diff', { id });
    this.cache.set(id, { at: Date.now(), diff });
    diff.catch(() => this.cache.delete(id));
    return diff;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    // The task id is the authority, not a first folder: the multi-file diff
    // editor labels each file by its path, which then reads as the repository's.
    const id = uri.authority;
    const file = uri.path.replace(/^\//, '');
    const side = uri.query;
    if (side === 'none') return '';
    const t = this.f.task(id) ?? (await this.f.connected().request('task/get', { id }));
    const diff = await this.load(id);
    const entry = diff.files.find((f) => f.path === file);
    const changed = t.result?.changedFiles.find((c) => c.path === file);
    const basePath = changed?.oldPath ?? file;
    const status = entry?.status ?? changed?.status;
    const base = status === 'added' ? '' : await gitShow(this.f.root!, `${t.worktree!.baseCommit}:${basePath}`).catch(() => '');
    if (side === 'base') return base;
    if (status === 'deleted') return '';
    const applied = applyPatch(base, filePatch(diff.patch, file));
    if (applied !== undefined) return applied;
    // The patch did not apply (binary, or cut): read the task branch instead.
    return gitShow(this.f.root!, `${t.worktree!.branch}:${file}`).catch(() => '');
  }
}

export class Changes {
  readonly diffs: DiffProvider;

  constructor(private readonly f: Host) {
    this.diffs = new DiffProvider(f);
  }

  async showChanges(id: string, offerMerge = false) {
    const t = this.f.task(id) ?? (await this.f.connected().request('task/get', { id }));
    const diff = await this.diffs.load(id);
    if (diff.files.length === 0) {
      void info(`Familiar: "${t.title}" changed no files.`);
      return;
    }
    const root = this.f.root!;
    const resources = diff.files.map((f) => {
      const file = vscode.Uri.file(path.join(root, f.path));
      // Same path on both sides (a different path would read as a rename);
      // an added file has no left side, a deleted one no right side.
      const side = (which: string) => vscode.Uri.from({ scheme: 'familiar-diff', authority: id, path: `/${f.path}`, query: which });
      return [file, f.status === 'added' ? undefined : side('base'), f.status === 'deleted' ? undefined : side('head')] as [vscode.Uri, vscode.Uri | undefined, vscode.Uri | undefined];
    });
    const title = `Familiar: ${t.title} (${t.worktree?.baseRef ?? 'base'} ↔ ${t.worktree?.branch ?? 'task'})`;
    try {
      await vscode.commands.executeCommand('vscode.changes', title, resources);
    } catch {
      // Older VS Code: one diff editor per file.
      const empty = vscode.Uri.from({ scheme: 'familiar-diff', authority: id, path: '/(none)', query: 'none' });
      for (const [, base, head] of resources) await vscode.commands.executeCommand('vscode.diff', base ?? empty, head ?? empty, title, { preview: false });
    }
    if (offerMerge && t.status === 'merging') {
      const choose = diff.files.length > 1 ? ['Choose Files…'] : [];
      const pick = await info(`Familiar · "${t.title}": ${plural(diff.files.length, 'file')} changed.`, 'Merge…', ...choose);
      if (pick === 'Merge…') await this.merge(id);
      else if (pick) await this.mergeFiles(id);
    }
  }

  /**
   * Keep or discard each changed file, then merge the kept ones
   * (task/merge paths): one commit on the base; the discarded files stay in
   * the task's branch, for a later merge or a follow-up. Every file kept is
   * the ordinary Merge…. Each file's diff opens from its row.
   */
  async mergeFiles(id: string) {
    const t = this.f.task(id) ?? (await this.f.connected().request('task/get', { id }));
    const diff = await this.diffs.load(id);
    const base = t.worktree?.baseRef ?? 'the base branch';
    type Item = vscode.QuickPickItem & { path: string };
    const open: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('diff'), tooltip: 'Open this file\'s changes' };
    const items: Item[] = diff.files.map((f) => ({
      label: f.path,
      description: `${f.status}, +${f.additions} −${f.deletions}`,
      path: f.path,
      buttons: [open],
    }));
    const qp = vscode.window.createQuickPick<Item>();
    qp.canSelectMany = true;
    qp.ignoreFocusOut = true;
    qp.title = `Familiar: which files of "${t.title}" go into ${base}?`;
    qp.placeholder = 'Unchecked files are left out and stay in the task\'s branch';
    qp.items = items;
    qp.selectedItems = items;
    qp.onDidTriggerItemButton((e) => {
      const f = diff.files.find((x) => x.path === e.item.path);
      if (!f) return;
      const side = (which: string) => vscode.Uri.from({ scheme: 'familiar-diff', authority: id, path: `/${f.path}`, query: which });
      const empty = side('none');
      void vscode.commands.executeCommand('vscode.diff', f.status === 'added' ? empty : side('base'), f.status === 'deleted' ? empty : side('head'), `${f.path} (${t.title})`, { preview: true, preserveFocus: true });
    });
    const kept = await new Promise<string[] | undefined>((resolve) => {
      qp.onDidAccept(() => {
        resolve(qp.selectedItems.map((i) => i.path));
        qp.hide();
      });
      qp.onDidHide(() => resolve(undefined));
      qp.show();
    });
    qp.dispose();
    if (!kept) return;
    if (kept.length === 0) {
      void info(`Familiar: no file of "${t.title}" was kept, so nothing was merged.`);
      return;
    }
    if (kept.length === diff.files.length) return this.merge(id);
    const discarded = diff.files.filter((f) => !kept.includes(f.path)).map((f) => f.path);
    let merged: Task;
    try {
      merged = await this.f.connected().request('task/merge', { id, paths: kept });
    } catch (err: any) {
      if (err?.code === Code.Conflict) {
        const files: string[] = err.data?.files ?? [];
        void error(`Familiar: "${t.title}" conflicts with ${base} in ${files.join(', ') || 'some files'}. Nothing was changed.`, 'Continue…').then((p) => p && this.f.continueTask(id));
        return;
      }
      throw err;
    }
    this.f.client?.tasks.set(id, merged);
    this.f.tree.refresh();
    const left = secondsUntil(merged.undoableUntil, Date.now()) ?? 0;
    const into = `Familiar: merged ${plural(kept.length, 'file')} of "${t.title}" into ${merged.worktree?.baseRef ?? base}; left out: ${discarded.join(', ')} (still in ${merged.worktree?.branch ?? 'the task\'s branch'}).`;
    if (left < 1) {
      void info(into);
      return;
    }
    const u = await info(`${into} Undo is possible for ${duration(left)}.`, 'Undo');
    if (u === 'Undo') await this.undo(id);
  }

  async merge(id: string) {
    const t = this.f.task(id);
    if (!t) throw new Error('That task is gone.');
    const items: (vscode.QuickPickItem & { strategy: MergeStrategy })[] = [
      { label: 'Merge', description: 'a merge commit', detail: `Keeps the task's commits; ${t.worktree?.baseRef ?? 'the base branch'} gets a merge commit.`, strategy: 'merge' },
      { label: 'Squash', description: 'one commit', detail: 'All of the task\'s changes as one commit.', strategy: 'squash' },
      { label: 'Rebase', description: 'linear history', detail: 'The task\'s commits replayed on top of the base branch.', strategy: 'rebase' },
    ];
    const pick = await vscode.window.showQuickPick(items, { title: `Familiar: merge "${t.title}" into ${t.worktree?.baseRef ?? 'the base branch'}`, ignoreFocusOut: true });
    if (!pick) return;
    let merged: Task;
    try {
      merged = await this.f.connected().request('task/merge', { id, strategy: pick.strategy });
    } catch (err: any) {
      if (err?.code === Code.Conflict) {
        const files: string[] = err.data?.files ?? [];
        void error(`Familiar: "${t.title}" conflicts with ${t.worktree?.baseRef ?? 'the base branch'} in ${files.join(', ') || 'some files'}. Nothing was changed.`, 'Continue…').then((p) => p && this.f.continueTask(id));
        return;
      }
      throw err;
    }
    this.f.client?.tasks.set(id, merged);
    this.f.tree.refresh();
    // The window as familiar set it (undoableUntil), not the default's.
    const left = secondsUntil(merged.undoableUntil, Date.now()) ?? 0;
    const into = `Familiar: merged "${t.title}" into ${merged.worktree?.baseRef ?? 'the base branch'} (${pick.strategy}).`;
    if (left < 1) {
      void info(into);
      return;
    }
    const u = await info(`${into} Undo is possible for ${duration(left)}.`, 'Undo');
    if (u === 'Undo') await this.undo(id);
  }

  async undo(id: string) {
    const t = await this.f.connected().request('task/undo', { id });
    this.f.client?.tasks.set(id, t);
    this.f.tree.refresh();
    this.f.log.info(`undid "${t.title}"; the undone work stays under refs/familiar/undo/${id}`);
    // familiar's warning (server/message) is the notification: that a push
    // or a change outside the worktree was not taken back, and where the
    // work is kept. A second one here pushed it out of view.
    vscode.window.setStatusBarMessage(`$(check) Familiar: undid "${t.title}"`, 5000);
  }
}

/**
 * Texts familiar or an agent proposes, served read-only to VS Code's diff
 * editor (familiar-text://<key>/<file name>): a permission's proposed file,
 * an edit's before and after in the task view. Kept while a window is open,
 * at most the last 200.
 */
export class TextProvider implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private n = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.authority) ?? '';
  }

  /** A URI whose document is text, named like file (its extension gives the language). */
  put(text: string, file: string): vscode.Uri {
    const key = `t${++this.n}`;
    this.texts.set(key, text);
    if (this.texts.size > 200) this.texts.delete(this.texts.keys().next().value!);
    return vscode.Uri.from({ scheme: 'familiar-text', authority: key, path: '/' + file.split(/[\\/]/).pop() });
  }

  /** Opens VS Code's diff editor on two texts. */
  async diff(before: string, after: string, file: string, title: string) {
    await vscode.commands.executeCommand('vscode.diff', this.put(before, file), this.put(after, file), title, { preview: true });
  }
}
