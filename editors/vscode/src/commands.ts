// The extension's commands: the palette's, the tree's row menus' (each
// command on a task twice: familiar.X takes the selected task, else the one
// in front; familiar.row.X takes its row), and the conversation's keys.

import * as vscode from 'vscode';
import type { Host } from './host';
import { rowTask } from './model';
import type { Node, TaskTree } from './tree';
import type { TaskActions } from './actions';
import type { Changes } from './changes';
import type { Terminals } from './terminals';
import type { Questions } from './questions';
import type { TaskViews } from './taskview';
import type { History } from './history';
import type { MergeQueue } from './mergequeue';
import type { Plans } from './plans';
import type { Startup } from './startup';
import { move } from './queue';
import { changeMode } from './modes';
import { showGrants } from './grants';
import { addPreset, checkMcpServers } from './mcp';

/** The pieces the commands drive. */
export interface CommandParts {
  view: vscode.TreeView<Node>;
  actions: TaskActions;
  changes: Changes;
  terminals: Terminals;
  questions: Questions;
  taskViews: TaskViews;
  history: History;
  queue: MergeQueue;
  plans: Plans;
  tree: TaskTree;
  startup: Startup;
  reconnect(): Promise<void>;
}

/** Registers every command through reg (which reports a command's failure). */
export function registerCommands(f: Host, reg: (id: string, fn: (...args: any[]) => any) => void, p: CommandParts) {
  const id = (arg: any): string => {
    const v = typeof arg === 'string' ? arg : arg?.kind === 'task' ? arg.id : undefined;
    if (v) return v;
    const sel = p.view.selection.find((n) => n.kind === 'task');
    if (sel && sel.kind === 'task') return sel.id;
    // From the palette: the task whose details are in front, else the last one looked at.
    const doc = vscode.window.activeTextEditor?.document.uri;
    if (doc?.scheme === 'familiar-task') return doc.path.split('/')[1];
    if (p.actions.lastShown && f.task(p.actions.lastShown)) return p.actions.lastShown;
    throw new Error('Select a task in the Familiar view first.');
  };
  reg('familiar.newTask', () => p.actions.newTask(false));
  reg('familiar.newTaskFromEditor', (uri?: vscode.Uri) => p.actions.newTask(true, uri));
  reg('familiar.refresh', () => p.reconnect());
  reg('familiar.reconnect', () => p.reconnect());
  // The commands on a task, each twice: familiar.X from the palette (or a
  // caller with an id) takes the selected task, else the one in front;
  // familiar.row.X, what the tree's row menus run, takes its row or does
  // nothing (rowTask).
  const onTask: [string, (id: string, a: any, b: any) => unknown][] = [
    ['openTerminal', (t) => p.terminals.openTerminal(t)],
    ['openTask', (t) => p.actions.showTask(t, false)],
    ['showDetails', (t) => p.actions.showDetails(t)],
    ['answer', (t) => p.questions.answer(t)],
    ['showChanges', (t) => p.changes.showChanges(t)],
    ['merge', (t) => p.changes.merge(t)],
    ['mergeFiles', (t) => p.changes.mergeFiles(t)],
    ['undo', (t) => p.changes.undo(t)],
    ['pause', (t) => p.actions.act('task/pause', t, 'Paused')],
    ['resume', (t) => p.actions.act('task/resume', t, 'Resumed')],
    ['cancel', (t) => p.actions.cancel(t)],
    ['retry', (t) => p.actions.act('task/retry', t, 'Retrying')],
    ['continue', (t) => f.continueTask(t)],
    ['remove', (t) => p.actions.remove(t)],
    ['openWorktree', (t) => p.actions.openWorktree(t)],
    ['terminalInWorktree', (t) => p.actions.terminalInWorktree(t)],
    ['moveUp', (t) => move(f, t, -1)],
    ['moveDown', (t) => move(f, t, 1)],
    // From a menu the second argument is the selection, not a mode.
    ['setMode', (t, _a, mode) => changeMode(f, t, typeof mode === 'string' ? mode as any : undefined)],
  ];
  for (const [name, fn] of onTask) {
    reg(`familiar.${name}`, (a, b) => fn(id(a), a, b));
    reg(`familiar.row.${name}`, (a, b) => fn(rowTask(a), a, b));
  }
  reg('familiar.showTask', (a) => p.actions.showTask(id(a), typeof a === 'string'));
  // The keys of the conversation: they act on the task view in front, else the selected task.
  const front = (a: any) => (typeof a === 'string' ? a : p.taskViews.activeTask() ?? id(a));
  reg('familiar.send', async (a) => {
    const t = front(a);
    await p.taskViews.open(t, false);
    p.taskViews.focusMessage(t);
  });
  reg('familiar.stop', (a) => p.taskViews.stop(front(a)));
  reg('familiar.allow', (a) => p.actions.answerInFront(front(a), 'allow'));
  reg('familiar.deny', (a) => p.actions.answerInFront(front(a), 'deny'));
  reg('familiar.nextQuestion', () => p.actions.nextQuestion());
  reg('familiar.answerPrompt', (taskId: string, questionId: string, choice: string) => p.questions.answerPrompt(taskId, questionId, choice));
  reg('familiar.searchTasks', () => p.history.search());
  reg('familiar.clearSearch', () => p.history.clearSearch());
  reg('familiar.showMore', (g) => p.tree.showMore(g?.kind === 'more' ? g.id : g));
  reg('familiar.clearFinished', () => p.history.clearFinished());
  reg('familiar.showArchived', () => p.history.showArchived());
  reg('familiar.grants', () => showGrants(f));
  reg('familiar.mergeAllReady', () => p.queue.mergeAllReady());
  reg('familiar.cancelQueue', () => p.queue.cancel());
  reg('familiar.undoQueue', () => p.queue.undo());
  reg('familiar.dismissQueue', () => p.queue.dismiss());
  const planId = (arg: any): string | undefined => (typeof arg === 'string' ? arg : arg?.kind === 'plan' ? arg.id : undefined);
  reg('familiar.newPlan', () => p.plans.newPlan());
  reg('familiar.openPlan', (arg) => { const id = planId(arg); if (id) p.plans.open(id); });
  reg('familiar.runPlan', (arg) => { const id = planId(arg); if (id) return p.plans.act('plan/run', { id }); });
  reg('familiar.cancelPlan', (arg) => { const id = planId(arg); if (id) return p.plans.act('plan/cancel', { id }, 'The plan is cancelled; what merged stays merged until Undo Plan.'); });
  reg('familiar.undoPlan', (arg) => { const id = planId(arg); if (id) return p.plans.undo(id); });
  reg('familiar.checkMcpServers', () => checkMcpServers(f));
  reg('familiar.addMcpPreset', () => addPreset(f));
  reg('familiar.runDoctor', () => p.startup.runDoctor());
  reg('familiar.showLog', () => f.log.show());
}
