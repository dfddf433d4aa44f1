// A task's ends, said once each: ready to merge (or done with no changes)
// as information, a block or a cancel the person did not ask for as a
// warning naming the reason in words, each with the actions that fit it.
// Ends replayed while the client catches up after a (re)connect wait for
// the task list: a replayed block may have been continued since.

import * as vscode from 'vscode';
import type { Host } from './host';
import { EndAnnouncer, endNotice, stillEnded, TaskEnd } from './model';
import type { Task, TaskCompletedNotification, TaskResult } from './protocol';
import { info, trace, warn } from './ui';

/** What an end's actions do. */
export interface EndActions {
  showChanges(id: string): Promise<void>;
  merge(id: string): Promise<void>;
  retry(id: string): Promise<void>;
  openTerminal(id: string): void;
  runDoctor(): Promise<void>;
  /** Whether the merge queue takes the task (it says its end itself). */
  queueTakes(id: string): boolean;
  /** Whether the task is a plan's step (the plan merges it and says its end). */
  planTakes(id: string): boolean;
  /** The task whose view is in front. */
  activeTask(): string | undefined;
}

export class Announcements {
  /** Ends that arrived while catching up after a (re)connect: see loaded. */
  private readonly replayed: { end: TaskEnd; result?: TaskResult }[] = [];

  constructor(private readonly f: Host, private readonly ends: EndAnnouncer, private readonly act: EndActions) {}

  /** A task/completed: every end of a task, announced once (see EndAnnouncer). */
  async completed(c: TaskCompletedNotification) {
    let t = this.f.task(c.id);
    if (!t && this.f.client?.state === 'connected') t = await this.f.client.request('task/get', { id: c.id }).catch(() => undefined);
    const end = this.ends.completed(c, t);
    if (end) this.soon(end, t, c.result);
  }

  /** A task/updated: an older familiar announces a block only with it. */
  updated(t: Task) {
    const end = this.ends.updated(t);
    if (end) this.soon(end, t);
  }

  /** The task list is loaded: the ends replayed meanwhile, if the task is still so. */
  loaded() {
    for (const d of this.replayed.splice(0)) {
      const t = this.f.task(d.end.id);
      if (t && stillEnded(t, d.end)) void this.announce(d.end, t, d.result ?? t.result);
    }
  }

  /**
   * Announces an end now, or, while the client replays what it missed, once
   * the task list is loaded: a replayed block may have been continued since.
   */
  private soon(end: TaskEnd, t?: Task, result?: TaskResult) {
    if (this.f.client?.state === 'connected') void this.announce(end, t, result);
    else this.replayed.push({ end, result });
  }

  private async announce(end: TaskEnd, t?: Task, r: TaskResult | undefined = t?.result) {
    if (end.success && !vscode.workspace.getConfiguration('familiar').get('notifyOnCompletion', true)) return;
    if (end.success && this.act.queueTakes(end.id)) {
      this.f.log.info(`task ${end.id} is ready again; the merge queue takes it`);
      return;
    }
    if (end.success && this.act.planTakes(end.id)) {
      // A plan merges its steps itself, and says when its steps are written
      // and when it ends: "ready to merge… Merge…" would offer what the
      // plan is about to do.
      this.f.log.info(`task ${end.id} ended; its plan takes it`);
      return;
    }
    const n = endNotice(t?.title ?? end.id, end, r && { changedFiles: r.changedFiles?.length ?? 0, costUsd: r.costUsd, summary: r.summary });
    trace({ ev: 'end', task: end.id, status: end.status, reason: end.reason, text: n.text, actions: n.actions });
    // "merging" is the protocol's name for a task whose work waits to be
    // merged; with nothing to merge the log says what the view says.
    const ended = end.success && end.noChanges ? 'done, no changes' : end.status;
    this.f.log.info(`task ${end.id} ended: ${ended}${end.reason ? ` (${end.reason})` : ''}`);
    if (n.level === 'info' && vscode.window.state.focused && this.act.activeTask() === end.id) {
      // The person is reading this task's conversation, where the end
      // shows: a notification would only cover its message box.
      vscode.window.setStatusBarMessage(`$(check) ${n.text.replace(/^Familiar · /, 'Familiar: ')}`, 5000);
      return;
    }
    try {
      const pick = await (n.level === 'warning' ? warn : info)(n.text, ...n.actions);
      switch (pick) {
        case 'Show Changes': return await this.act.showChanges(end.id);
        case 'Merge…': return await this.act.merge(end.id);
        case 'Continue…': return await this.f.continueTask(end.id);
        case 'Retry': return await this.act.retry(end.id);
        case 'Open Terminal': return this.act.openTerminal(end.id);
        case 'Run Doctor': return await this.act.runDoctor();
      }
    } catch (err: any) {
      this.f.fail(err);
    }
  }
}
