// Change Mode…: a task's mode (architect, executor, auditor) switched while
// it lives, from the tree's context menu or the task view (task/setMode).
// familiar restarts the agent in the same session with the new tool set.

import * as vscode from 'vscode';
import type { Host } from './host';
import type { Mode } from './protocol';
import { canSetMode, modeChoices, modeWords } from './controls';
import { taskLabel } from './model';

export async function changeMode(f: Host, id: string, to?: Mode) {
  const t = f.task(id);
  if (!t) throw new Error('That task is gone.');
  if (!canSetMode(t.status)) throw new Error(`"${taskLabel(t)}" has ended (${t.status}); its mode can no longer change.`);
  let mode = to;
  if (!mode) {
    const pick = await vscode.window.showQuickPick(
      // The words as detail, on a line of their own: as a description the auditor's were cut.
      modeChoices(t.mode).map((c) => ({ label: c.label, description: c.current ? 'now' : '', detail: modeWords[c.mode], mode: c.mode })),
      { title: `Change the mode of "${taskLabel(t)}"`, placeHolder: `Now ${t.mode}. The agent goes on in the same conversation with the new mode's tools.` });
    if (!pick) return;
    mode = pick.mode;
  }
  if (mode === t.mode) return;
  const got = await f.connected().request('task/setMode', { id, mode });
  f.client?.tasks.set(got.id, got);
  f.tree.taskChanged(got.id);
  f.taskViews.taskChanged(got);
  vscode.window.setStatusBarMessage(`$(check) Familiar: "${taskLabel(got)}" is now ${got.mode}`, 4000);
}
