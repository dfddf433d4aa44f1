// The queue's order from the tree: Move Up / Move Down on a queued task
// (task/reorder before the task above it). Priority is New Task's; pausing
// a queued task holds it in the queue (task/pause).

import * as vscode from 'vscode';
import type { Host } from './host';
import { tasksIn } from './model';
import { reorderStep } from './lists';

export async function move(f: Host, id: string, by: -1 | 1) {
  const client = await f.whenConnected();
  // Only queued ones: a task held in the queue (paused) cannot be reordered.
  const step = reorderStep(tasksIn('queued', client.tasks.values()).filter((t) => t.status === 'queued'), id, by);
  if (!step) return;
  await client.request('task/reorder', step);
  // The queue's task/updated (new positions) redraws the rows.
  const t = client.tasks.get(id);
  if (t) vscode.window.setStatusBarMessage(`$(check) Familiar: moved "${t.title}" ${by < 0 ? 'up' : 'down'}`, 3000);
}
