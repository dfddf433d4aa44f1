// familiar's settings as VS Code holds them (familiar.*, the policy file,
// the MCP servers), sent at connect and again on every change; the policy
// file is watched, so an edit is sent as a settings change.

import * as vscode from 'vscode';
import * as path from 'path';
import type { Host } from './host';
import type { Policy, SettingsUpdate } from './protocol';
import { settingsFrom } from './model';
import { settingServers } from './mcp';
import { readPolicyFile } from './policyfile';
import { error } from './ui';

/** What a change of the settings sets off besides settings/update. */
export interface SettingsEvents {
  /** familiar.path changed: connect to the familiar it names. */
  pathChanged(): Promise<void>;
  /** familiar answered settings/update with its undo window. */
  undoWindow(sec: number): void;
}

export class SettingsSync implements vscode.Disposable {
  private policyWatcher?: vscode.Disposable;

  constructor(private readonly f: Host, private readonly on: SettingsEvents) {}

  dispose() {
    this.policyWatcher?.dispose();
  }

  /** The settings to send (initialize, settings/update). */
  current(): SettingsUpdate {
    const c = vscode.workspace.getConfiguration('familiar');
    const s = settingsFrom((key, def) => c.get(key, def));
    const policy = this.policy();
    if (policy) s.permissionPolicy = policy;
    // Unset, familiar keeps the servers it has (another window's, familiar's own settings).
    const mcp = settingServers();
    if (mcp) s.mcpServers = mcp;
    return s;
  }

  private policy(): Policy | undefined {
    const c = vscode.workspace.getConfiguration('familiar');
    const file = c.get<string>('policyFile', '');
    if (file) {
      const p = path.isAbsolute(file) ? file : path.join(this.f.root ?? '', file);
      const r = readPolicyFile(p);
      if ('error' in r) {
        void error(`Familiar: the policy file ${p} is not used: ${r.error}`);
        return undefined;
      }
      return r.policy;
    }
    const pol = c.get<Policy>('permissionPolicy');
    return pol && pol.default ? pol : undefined;
  }

  /** Watches the policy file, so that an edit is sent as a settings change. */
  watchPolicyFile() {
    this.policyWatcher?.dispose();
    this.policyWatcher = undefined;
    const file = vscode.workspace.getConfiguration('familiar').get<string>('policyFile', '');
    if (!file) return;
    const p = path.isAbsolute(file) ? file : path.join(this.f.root ?? '', file);
    const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(path.dirname(p), path.basename(p)));
    const changed = () => this.changed({ affectsConfiguration: (s: string) => s === 'familiar' || s === 'familiar.policyFile' });
    w.onDidChange(changed);
    w.onDidCreate(changed);
    w.onDidDelete(changed);
    this.policyWatcher = w;
  }

  /** A configuration change: the policy file watched anew, familiar.path followed, the rest sent. */
  async changed(e: vscode.ConfigurationChangeEvent) {
    if (!e.affectsConfiguration('familiar')) return;
    if (e.affectsConfiguration('familiar.policyFile')) this.watchPolicyFile();
    if (e.affectsConfiguration('familiar.path')) return this.on.pathChanged();
    const client = this.f.client;
    if (client?.state !== 'connected') return;
    try {
      const settings = this.current();
      // The setting removed: the session's servers go too (mcpServers is replaced whole).
      if (e.affectsConfiguration('familiar.mcpServers') && !settings.mcpServers) settings.mcpServers = {};
      const s = await client.request('settings/update', { settings });
      if (typeof s?.undoWindowSec === 'number') this.on.undoWindow(s.undoWindowSec);
      this.f.log.info('settings updated');
    } catch (err: any) {
      this.f.fail(err);
    }
  }
}
