// What the person does to a task from a command, a menu or a view: open
// it (its view, its details, its worktree), answer it from a key, go on
// with it, stop it, remove it; and New Task with what the editor adds.

import * as vscode from 'vscode';
import * as fs from 'fs';
import * as path from 'path';
import type { Host } from './host';
import type { TaskCreateParams } from './protocol';
import { Code } from './protocol';
import { taskLabel } from './model';
import { slug, trace, warn } from './ui';
import type { NewTaskForm } from './newtask';
import type { TaskViews } from './taskview';
import type { Questions } from './questions';
import type { History } from './history';

/** The pieces the actions drive, and the task last looked at (what a palette command acts on). */
export interface ActionParts {
  newTaskForm: NewTaskForm;
  taskViews: TaskViews;
  questions: Questions;
  history: History;
}

export class TaskActions {
  /** The task last shown: what a palette command acts on when no row is selected. */
  lastShown?: string;

  constructor(private readonly f: Host, private readonly d: ActionParts) {}

  /** New Task: the form, with what the editor adds this time (shown there, removable). */
  async newTask(fromEditor: boolean, uri?: vscode.Uri) {
    await this.d.newTaskForm.open(this.editorHints(fromEditor, uri));
  }

  /** The current file and selection as hints.files / hints.notes. */
  editorHints(fromEditor: boolean, uri?: vscode.Uri): TaskCreateParams['hints'] {
    const ed = vscode.window.activeTextEditor;
    const target = uri ?? (fromEditor ? ed?.document.uri : undefined) ?? (ed && !ed.selection.isEmpty ? ed.document.uri : undefined);
    if (!target || target.scheme !== 'file' || !this.f.root) return undefined;
    const rel = path.relative(this.f.root, target.fsPath).split(path.sep).join('/');
    if (rel.startsWith('..')) return undefined;
    const hints: NonNullable<TaskCreateParams['hints']> = { files: [rel] };
    if (ed && ed.document.uri.toString() === target.toString() && !ed.selection.isEmpty) {
      const s = ed.selection;
      hints.notes = `Selected in ${rel} lines ${s.start.line + 1}-${s.end.line + 1}:\n\`\`\`\n${ed.document.getText(s)}\n\`\`\``;
    }
    return hints;
  }


  /** The task view (a tree click: in the preview tab, the focus kept in the tree). */
  async showTask(id: string, preview: boolean) {
    this.lastShown = id;
    const t = this.f.task(id);
    if (!t) throw new Error('That task is gone.');
    await this.d.taskViews.open(id, preview);
    if (t.status === 'waiting' && t.pendingQuestion) this.d.questions.prompt(t, t.pendingQuestion);
  }

  /** Open Worktree: a new window on the task's worktree, to try its change before keeping it. */
  async openWorktree(id: string) {
    const wt = this.f.task(id)?.worktree?.path;
    if (!wt || !fs.existsSync(wt)) throw new Error('That task has no worktree on disk (removed after its merge, or not made yet).');
    trace({ ev: 'openWorktree', task: id });
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(wt), { forceNewWindow: true });
  }

  /** Terminal in Worktree: a shell of the person's own in the task's worktree (not the agent's terminal). */
  terminalInWorktree(id: string) {
    const t = this.f.task(id);
    const wt = t?.worktree?.path;
    if (!t || !wt || !fs.existsSync(wt)) throw new Error('That task has no worktree on disk (removed after its merge, or not made yet).');
    const term = vscode.window.createTerminal({ name: `Worktree: ${taskLabel(t)}`, cwd: wt, iconPath: new vscode.ThemeIcon('git-branch') });
    term.show();
  }

  /** Allow or Deny from a key: the permission the task in front waits on. */
  async answerInFront(id: string, action: 'allow' | 'deny') {
    const q = this.f.task(id)?.pendingQuestion;
    if (!q || q.kind !== 'permission') {
      vscode.window.setStatusBarMessage(`$(info) Familiar: ${q ? 'that task asks a question: answer it in its view' : 'that task asks nothing'}`, 4000);
      return;
    }
    await this.d.questions.fromView(id, q.id, { action });
  }

  /** The next task waiting on the person, after the one in front (oldest question first): its view, its card. */
  async nextQuestion() {
    const waiting = [...(this.f.client?.tasks.values() ?? [])].filter((t) => t.pendingQuestion && !t.archivedAt)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : 0));
    if (!waiting.length) {
      vscode.window.setStatusBarMessage('$(check) Familiar: no task is waiting on you', 4000);
      return;
    }
    const at = waiting.findIndex((t) => t.id === this.d.taskViews.activeTask());
    const next = waiting[(at + 1) % waiting.length];
    this.lastShown = next.id;
    await this.d.taskViews.open(next.id, false);
  }

  /** The details as a read-only document (for copying, searching). */
  async showDetails(id: string) {
    this.lastShown = id;
    const t = this.f.task(id);
    if (!t) throw new Error('That task is gone.');
    const uri = vscode.Uri.from({ scheme: 'familiar-task', path: `/${id}/${slug(t.title)}.md` });
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
    if (t.status === 'waiting' && t.pendingQuestion) this.d.questions.prompt(t, t.pendingQuestion);
  }


  async act(method: 'task/pause' | 'task/resume' | 'task/cancel' | 'task/retry', id: string, done: string) {
    const t = await this.f.connected().request(method, { id });
    this.f.client?.tasks.set(t.id, t);
    this.f.tree.refresh();
    vscode.window.setStatusBarMessage(`$(check) Familiar: ${done} "${t.title}"`, 3000);
  }

  async cancel(id: string) {
    const t = this.f.task(id);
    // The modal has its own "Cancel" (keep going): the action must not be a second one.
    const pick = await warn(`Stop "${t ? taskLabel(t) : id}"? Its agent is stopped and the task cancelled; its worktree is kept, and Retry starts it again.`, { modal: true }, 'Stop Task');
    if (pick) await this.act('task/cancel', id, 'Cancelled');
  }

  async continueTask(id: string) {
    const t = this.f.task(id);
    const text = await vscode.window.showInputBox({ title: `Continue "${t?.title ?? id}"`, prompt: 'A follow-up message to the agent', ignoreFocusOut: true });
    if (!text) return;
    await this.f.connected().request('task/send', { id, text });
  }

  async remove(id: string) {
    const t = this.f.task(id);
    const pick = await warn(`Remove "${t?.title ?? id}"? Its worktree is deleted and the task goes to the archive (Show Archived brings it back).`, { modal: true }, 'Remove', 'Remove with Branch');
    if (!pick) return;
    // archive: the row goes (a removed task's row used to stay).
    const params = { id, deleteBranch: pick === 'Remove with Branch', archive: true };
    try {
      await this.f.connected().request('task/remove', params);
    } catch (err: any) {
      if (err?.code !== Code.FailedPrecondition) throw err;
      const force = await warn(`Familiar: ${err.message}`, { modal: true }, 'Remove Anyway');
      if (!force) return;
      await this.f.connected().request('task/remove', { ...params, force: true });
    }
    this.d.history.dropArchived([id]);
  }

  /**
   * The whole of a text familiar showed clipped (a ref of task/text), paged;
   * at most 64 MB, past which the end is marked cut.
   */
  async text(id: string, ref: string): Promise<string> {
    const parts: string[] = [];
    let offset = 0, size = 0;
    for (;;) {
      const page = await this.f.connected().request('task/text', { id, ref, offset, limit: 1 << 20 });
      parts.push(page.data);
      size += page.data.length;
      if (!page.truncated || page.nextOffset <= offset) break;
      offset = page.nextOffset;
      if (size > 64 << 20) {
        parts.push('\n[familiar: cut at 64 MB]');
        break;
      }
    }
    return parts.join('');
  }
}
