// MCP servers: the session's servers are a setting (familiar.mcpServers,
// sent as settings.mcpServers); "Check MCP Servers" runs mcp/check on them
// and shows each server's state in words; "Add MCP Server Preset…" adds one
// of familiar's presets (mcp/presets) to the setting and checks it. New
// Task adds presets to one task (newtask.ts).

import * as vscode from 'vscode';
import type { Host } from './host';
import type { McpCheckResult, McpPreset, McpServer } from './protocol';
import { mcpCheckText } from './controls';
import { info, warn } from './ui';

/** The setting's servers; undefined when the person never set it (familiar keeps its own). */
export function settingServers(): Record<string, McpServer> | undefined {
  const c = vscode.workspace.getConfiguration('familiar');
  const i = c.inspect<Record<string, McpServer>>('mcpServers');
  const set = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
  return set === undefined ? undefined : { ...set };
}

/**
 * Checks servers (the settings' when absent) and shows each one's state in
 * a list: ready, or why it cannot start. Returns the result (the UI test
 * reads it through the list).
 */
export async function checkMcpServers(f: Host, servers?: Record<string, McpServer>): Promise<McpCheckResult | undefined> {
  const client = await f.whenConnected();
  const res = await client.request('mcp/check', servers ? { servers } : {});
  if (!res.servers?.length) {
    const pick = await info('Familiar: no MCP servers are set for the session (setting "familiar.mcpServers").', 'Add MCP Server Preset…', 'Open Settings');
    if (pick === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'familiar.mcpServers');
    if (pick === 'Add MCP Server Preset…') await addPreset(f);
    return res;
  }
  const bad = res.servers.filter((s) => !s.available).length;
  f.log.info(`mcp/check: ${res.servers.map(mcpCheckText).join('; ')}`);
  const qp = vscode.window.createQuickPick<vscode.QuickPickItem>();
  qp.title = bad ? `MCP servers: ${bad} of ${res.servers.length} cannot start` : `MCP servers: all ${res.servers.length} ready`;
  qp.placeholder = 'What familiar found when it checked each server (commands on PATH, URLs reachable)';
  qp.items = res.servers.map((s) => ({
    label: `${s.available ? '$(check)' : '$(error)'} ${s.name}`,
    description: s.available ? (s.problem ? 'ready, with a warning' : 'ready') : 'cannot start',
    detail: s.problem || undefined,
  }));
  qp.onDidAccept(() => qp.hide());
  qp.onDidHide(() => qp.dispose());
  qp.show();
  return res;
}

/** Adds one of familiar's presets to the setting (the workspace's) and checks it. */
export async function addPreset(f: Host) {
  const client = await f.whenConnected();
  const presets = await client.request('mcp/presets', {});
  const have = settingServers() ?? {};
  const pick = await vscode.window.showQuickPick(
    presets.map((p) => ({ label: p.name, description: have[p.name] ? 'already set' : '', detail: presetDetail(p), preset: p })),
    { title: 'Add an MCP server to every task of this workspace', placeHolder: 'A preset of familiar' });
  if (!pick) return;
  have[pick.preset.name] = pick.preset.server;
  await vscode.workspace.getConfiguration('familiar').update('mcpServers', have, vscode.ConfigurationTarget.Workspace);
  const res = await client.request('mcp/check', { servers: { [pick.preset.name]: pick.preset.server } });
  const c = res.servers[0];
  if (!c) return;
  const text = `Familiar: added the MCP server ${mcpCheckText(c)}`;
  if (c.available) void info(text);
  else void warn(text);
}

/** A preset's command and what it needs, in a line. */
export function presetDetail(p: McpPreset): string {
  const s = p.server as any;
  const what = s.type === 'stdio' || !s.type ? [s.command, ...(s.args ?? [])].join(' ') : s.url;
  return p.requires?.length ? `${what} (needs ${p.requires.join(', ')})` : what;
}
