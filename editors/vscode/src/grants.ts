// Permission grants (allow-always rules) by where they hold, with Revoke;
// and the warning before autonomy familiar sends when agents would ask
// nothing, shown once per workspace with the setting it is about.

import * as vscode from 'vscode';
import type { Host } from './host';
import type { Grant, GrantScope, ServerMessageNotification } from './protocol';
import { truncate } from './model';
import { warn } from './ui';
import { grantsByScope } from './lists';

const scopeLabel: Record<GrantScope, string> = { task: 'This task', repository: 'This repository', user: 'You, in every repository' };

type GrantItem = vscode.QuickPickItem & { grant?: Grant };

/** Permission Grants…: every allow-always grant by scope; one picked can be revoked. */
export async function showGrants(f: Host) {
  const client = await f.whenConnected();
  const r = await client.request('policy/list', {});
  if (!r.grants.length) {
    void vscode.window.showInformationMessage('Familiar: no allow-always grants. An agent asks before everything your policy does not allow.');
    return;
  }
  const items: GrantItem[] = [];
  let last = '';
  for (const g of grantsByScope(r.grants)) {
    const task = g.taskId ? f.task(g.taskId) : undefined;
    const heading = g.scope === 'task' ? `Task: ${task ? truncate(task.title, 60) : g.taskId}` : scopeLabel[g.scope];
    if (heading !== last) {
      items.push({ label: heading, kind: vscode.QuickPickItemKind.Separator });
      last = heading;
    }
    items.push({
      label: g.rule,
      description: g.grantedAt ? `granted ${new Date(g.grantedAt).toLocaleString()}` : '',
      detail: g.scope === 'repository' ? 'Every task here (.familiar/policy.yaml of the main checkout)' : g.scope === 'user' ? 'Every repository (your familiar policy.yaml)' : undefined,
      grant: g,
    });
  }
  const pick = await vscode.window.showQuickPick(items, { title: 'Permission Grants: pick one to revoke', matchOnDescription: true, ignoreFocusOut: true });
  const g = pick?.grant;
  if (!g) return;
  const where = g.scope === 'task' ? 'this task' : g.scope === 'repository' ? 'this repository' : 'you, in every repository';
  const yes = await vscode.window.showQuickPick([
    { label: `$(trash) Revoke ${g.rule}`, revoke: true, detail: `Agents ask again before what it allowed, for ${where}, from their next call.` },
    { label: 'Keep it', revoke: false },
  ], { title: `Revoke ${g.rule}?`, ignoreFocusOut: true });
  if (!yes?.revoke) return;
  const res = await client.request('policy/revoke', { rule: g.rule, scope: g.scope, taskId: g.taskId });
  if (res.revoked && res.heldByClaude) {
    // A claude that was handed the rule keeps it until it stops: say so
    // rather than let the person believe the next call is asked.
    void vscode.window.showInformationMessage(`Familiar: revoked ${g.rule} for ${where}. A claude still at work was handed it and keeps it until its turn ends; after that it is asked again.`);
  } else {
    vscode.window.setStatusBarMessage(res.revoked ? `$(check) Familiar: revoked ${g.rule} for ${where}` : `Familiar: ${g.rule} was no longer granted`, 5000);
  }
}

/** Where to take a person from the warning about a setting familiar names. */
const settingOf: Record<string, string> = {
  permissionPolicy: 'familiar.permissionPolicy',
  // Elevated is per task (New Task); the deny rules that still win are the policy's.
  'directives.elevated': 'familiar.permissionPolicy',
};

/**
 * The warning before autonomy (a server/message with a setting): shown once
 * per workspace and setting, with a button to the setting; true when the
 * message was one (the caller shows nothing else).
 */
export function autonomyWarning(f: Host, state: vscode.Memento, m: ServerMessageNotification): boolean {
  if (!m.setting) return false;
  const key = `familiar.warned.${m.setting}`;
  if (state.get<boolean>(key)) return true;
  void state.update(key, true);
  if (m.setting === 'directives.elevated') {
    // Elevated is chosen per task in New Task: no setting to open, and no protocol names in the words.
    void warn('Familiar: a task is elevated: its agent runs every tool call without asking anyone. Only a deny rule of the permission policy still stops one.');
    return true;
  }
  void warn(`Familiar: ${m.text}`, 'Open Setting').then((p) => {
    if (p) void vscode.commands.executeCommand('workbench.action.openSettings', settingOf[m.setting!] ?? `familiar.${m.setting}`);
  });
  return true;
}
