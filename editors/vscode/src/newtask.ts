// New Task as a form: one page (a webview in the task view's style) with
// the title, a multi-line description, type, mode, profile, skills,
// acceptance criteria and priority, and what the editor's file and selection
// add, each removable. Every change is kept as a draft (workspace state), so
// closing the tab or Escape loses nothing: New Task opens the draft again
// until it is created.

import * as vscode from 'vscode';
import type { Host } from './host';
import type { McpPreset, Mode, Task, TaskType } from './protocol';
import { directiveWords, elevatedWarning, loginWords, mcpCheckText, modelChoices, profileFor, shortPath } from './controls';
import { presetDetail } from './mcp';
import * as os from 'os';
import { createParams, Draft } from './draft';
import { Code } from './protocol';
import { trace } from './ui';

const draftKey = 'familiar.newTaskDraft';

export class NewTaskForm {
  private panel?: vscode.WebviewPanel;
  /** mcp/presets as last read (task/create takes the servers, not their names). */
  private presets: McpPreset[] = [];

  constructor(private readonly f: Host, private readonly state: vscode.Memento, private readonly extensionUri: vscode.Uri) {}

  /** Opens the form (or brings it forward); context is what the editor adds this time. */
  async open(context?: { files?: string[]; notes?: string }) {
    const saved = this.state.get<Draft>(draftKey);
    const defMode = vscode.workspace.getConfiguration('familiar').get<Mode>('defaultMode', 'executor');
    const draft: Draft = {
      title: '', description: '', type: 'implement', mode: defMode, profile: '', skills: [], criteria: '', priority: 0, files: [], notes: '',
      ...saved,
    };
    // The editor's context of this opening joins the draft's (a file once).
    for (const f of context?.files ?? []) if (!draft.files.includes(f)) draft.files.push(f);
    if (context?.notes) draft.notes = context.notes;
    await this.state.update(draftKey, draft);
    if (this.panel) {
      this.panel.reveal();
      void this.panel.webview.postMessage({ type: 'draft', draft });
      return;
    }
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel('familiar.newTask', 'New Task', vscode.ViewColumn.Active, {
      enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: true,
    });
    this.panel = panel;
    const w = panel.webview;
    const nonce = Array.from({ length: 32 }, () => Math.floor(Math.random() * 36).toString(36)).join('');
    const src = (f: string) => w.asWebviewUri(vscode.Uri.joinPath(media, f));
    w.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${w.cspSource}; script-src 'nonce-${nonce}';">
<link rel="stylesheet" href="${src('taskview.css')}"></head>
<body class="form"><form id="form" novalidate></form>
<script nonce="${nonce}" src="${src('mentions.js')}"></script>
<script nonce="${nonce}" src="${src('newtask.js')}"></script></body></html>`;
    const subs: vscode.Disposable[] = [];
    subs.push(w.onDidReceiveMessage(async (m: any) => {
      if (await this.f.mentions.answer(m, (x) => w.postMessage(x))) return;
      switch (m?.type) {
        case 'ready': {
          const client = await this.f.whenConnected();
          const [profiles, skills, presets] = await Promise.all([
            client.request('profiles/list', {}).catch(() => []),
            client.request('skills/list', {}).catch(() => []),
            client.request('mcp/presets', {}).catch(() => []),
          ]);
          this.presets = presets;
          // The profile a type gets when the form names none, for the
          // form to pre-select that profile's default skills.
          const types: TaskType[] = ['implement', 'fix', 'refactor', 'test', 'custom'];
          void w.postMessage({
            type: 'init',
            draft: this.state.get<Draft>(draftKey),
            profiles: profiles.map((p) => ({ name: p.name, description: p.description })),
            typeProfile: Object.fromEntries(types.map((t) => [t, profileFor('', t, profiles)])),
            skills: skills.map((s) => ({
              name: s.name, description: s.description, defaultFor: s.defaultFor ?? [],
              where: s.source === 'workspace' ? 'this repository' : s.source === 'global' ? 'yours' : s.source,
              path: shortPath(s.path, this.f.root, os.homedir()),
            })),
            presets: presets.map((p) => ({ name: p.name, detail: presetDetail(p) })),
            words: { ...directiveWords, elevatedWarning },
            models: modelChoices,
            login: loginWords(this.f.client?.init?.claude?.auth),
          });
          return;
        }
        case 'checkPreset': {
          // A preset added to the task is checked at once: its state shows next to it.
          const p = this.presets.find((x) => x.name === m.name);
          if (!p) return;
          const res = await (await this.f.whenConnected()).request('mcp/check', { servers: { [p.name]: p.server } })
            .catch((err: any) => ({ servers: [{ name: p.name, available: false, problem: `familiar could not check it: ${err?.message ?? err}` }] }));
          const c = res.servers.find((x) => x.name === p.name);
          if (c) void w.postMessage({ type: 'presetCheck', name: p.name, ok: c.available, text: mcpCheckText(c) });
          return;
        }
        case 'draft':
          await this.state.update(draftKey, m.draft);
          return;
        case 'cancel':
          // The draft stays: New Task brings it back.
          panel.dispose();
          return;
        case 'discard':
          await this.state.update(draftKey, undefined);
          panel.dispose();
          return;
        case 'create':
          await this.create(panel, m.draft as Draft);
          return;
      }
    }));
    panel.onDidDispose(() => {
      for (const s of subs) s.dispose();
      if (this.panel === panel) this.panel = undefined;
    });
  }

  private async create(panel: vscode.WebviewPanel, d: Draft) {
    await this.state.update(draftKey, d);
    if (!d.title.trim()) {
      void panel.webview.postMessage({ type: 'error', field: 'title', message: 'The task needs a title.' });
      return;
    }
    const params = createParams(d, this.presets);
    let t: Task;
    try {
      t = await (await this.f.whenConnected()).request('task/create', params);
    } catch (err: any) {
      // A field familiar refuses is shown at the field.
      const field = err?.code === Code.InvalidParams ? String(err.data?.field ?? '') : '';
      void panel.webview.postMessage({ type: 'error', field: field.replace(/\[.*$/, '').replace(/^hints\..*/, 'context'), message: err?.message ?? String(err) });
      return;
    }
    trace({ ev: 'newTask', created: t.id });
    await this.state.update(draftKey, undefined);
    panel.dispose();
    this.f.client?.tasks.set(t.id, this.f.client.tasks.get(t.id) ?? t);
    this.f.tree.refresh();
    this.f.updateStatus();
    vscode.window.setStatusBarMessage(`$(check) Familiar: queued "${t.title}"`, 4000);
    void vscode.commands.executeCommand('workbench.view.extension.familiar');
  }
}
