// The read-only details document of a task (familiar-task:/<id>/<slug>.md).

import * as vscode from 'vscode';
import type { Host } from './host';
import { activityText, describe, money, reasonText, taskStatusText, taskLabel } from './model';

/** The read-only details document a tree click opens. */
export class DetailsProvider implements vscode.TextDocumentContentProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly open = new Map<string, vscode.Uri>();

  constructor(private readonly f: Host) {}

  changed(id: string) {
    const u = this.open.get(id);
    if (u) this.emitter.fire(u);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const id = uri.path.split('/')[1];
    this.open.set(id, uri);
    const t = this.f.task(id);
    if (!t) return `Task ${id} is gone.\n`;
    const now = Date.now();
    const lines = [
      `# ${taskLabel(t)}`,
      '',
      `Status:   ${taskStatusText(t)}${t.status === 'running' && (t.activityDetail || activityText(t.activity)) ? ` (${t.activityDetail || activityText(t.activity)})` : ''}`,
      `          ${describe(t, now)}`,
      `Type:     ${t.type} · mode ${t.mode} · driver ${t.driver} · attempt ${t.attempt}`,
      `Id:       ${t.id}`,
    ];
    if (t.worktree) lines.push(`Branch:   ${t.worktree.branch} (from ${t.worktree.baseRef} @ ${t.worktree.baseCommit.slice(0, 10)})`, `Worktree: ${t.worktree.path}`);
    lines.push(`Created:  ${t.createdAt}`);
    if (t.startedAt) lines.push(`Started:  ${t.startedAt}`);
    if (t.finishedAt) lines.push(`Finished: ${t.finishedAt}`);
    lines.push('', '## Description', '', t.description);
    if (t.acceptanceCriteria.length) lines.push('', '## Acceptance criteria', '', ...t.acceptanceCriteria.map((c) => `- ${c}`));
    if (t.pendingQuestion) lines.push('', '## Waiting on you', '', t.pendingQuestion.text, ...t.pendingQuestion.options.map((o) => `- ${o.label}`));
    if (t.blocked) lines.push('', '## Blocked', '', `It ${reasonText({ reason: t.blocked.reason, httpStatus: t.blocked.status, resetsAt: t.blocked.resetsAt })}.`, ...(t.blocked.detail ? ['', t.blocked.detail] : []));
    if (t.result?.noChanges) lines.push('', 'Done, no changes: there is nothing to merge.');
    if (t.result) {
      lines.push('', '## Result', '', t.result.summary);
      if (t.result.costUsd !== undefined) lines.push('', `Cost: ${money(t.result.costUsd)}`);
      if (t.result.truncated) lines.push('', `(The summary is clipped: ${t.result.originalSize ?? 'more'} bytes in all; the task view opens it whole.)`);
      if (t.result.changedFiles.length) lines.push('', '## Changed files', '', ...t.result.changedFiles.map((c) => `- ${c.status} ${c.path}${c.oldPath ? ` (from ${c.oldPath})` : ''}`));
      if (t.result.commits.length) lines.push('', '## Commits', '', ...t.result.commits.map((c) => `- ${c.sha.slice(0, 10)} ${c.subject}`));
    }
    return lines.join('\n') + '\n';
  }
}
