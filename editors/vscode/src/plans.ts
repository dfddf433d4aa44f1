// Plans in VS Code (issue 39): New Plan… (a goal an architect breaks into
// steps), the plan as an editable view (steps, their needs as a list and as
// a small graph, each step's state in words, drag to reorder, Run, Cancel,
// Undo Plan, Retry and Skip of a failed step), and the plans with their
// steps at the top of the Tasks view. The words are planmodel.ts's.
//
// The view's script builds the page with textContent only (no HTML from
// data) under a content security policy that allows its own script and
// style and nothing remote, as the task view does.

import * as vscode from 'vscode';
import type { Host } from './host';
import type { Methods, Plan, PlanStep, PlanStepSpec } from './protocol';
import { Code } from './protocol';
import { editable, graphLine, planLabel, planStateWords, stepEditable, stepLine, stepStateWords, totalsText } from './planmodel';
import { truncate } from './model';
import { info, trace } from './ui';

export type PlanNode = { kind: 'plan'; id: string } | { kind: 'planStep'; id: string };

export function isPlanNode(n: { kind: string }): n is PlanNode {
  return n.kind === 'plan' || n.kind === 'planStep';
}

/** How long an ended plan stays at the top of the Tasks view. */
const shownAfterEndMs = 30 * 60 * 1000;

export class Plans implements vscode.Disposable {
  private readonly nodes = new Map<string, PlanNode>();
  private readonly views = new Map<string, PlanView>();
  private readonly subs: vscode.Disposable[] = [];
  /** Ends already announced, so each is said once. */
  private readonly announced = new Set<string>();

  constructor(private readonly f: Host, private readonly extensionUri: vscode.Uri) {
    this.subs.push(vscode.window.registerWebviewPanelSerializer('familiar.plan', {
      deserializeWebviewPanel: async (panel, state: any) => {
        if (typeof state?.id !== 'string') return panel.dispose();
        panel.webview.options = this.options();
        this.attach(panel, state.id);
      },
    }));
  }

  dispose() {
    for (const v of this.views.values()) v.panel.dispose();
    for (const d of this.subs) d.dispose();
  }

  private get plans(): Map<string, Plan> {
    return this.f.client?.plans ?? new Map();
  }

  /** The plans were (re)loaded: an end that came before is not news. */
  loaded() {
    for (const p of this.plans.values()) this.announced.add(`${p.id}:${p.state}`);
    for (const v of this.views.values()) v.show();
    this.f.tree.refresh();
  }

  /** A plan/updated: the tree and the plan's view follow; its end is said once. */
  updated(p: Plan) {
    trace({ ev: 'plan', id: p.id, state: p.state, steps: p.steps.map((s) => `${s.id}:${s.state}`) });
    this.views.get(p.id)?.show();
    this.f.tree.refresh();
    const end = p.state === 'done' || p.state === 'held' || p.state === 'failed' || (p.state === 'draft' && !!p.architectTaskId);
    const key = `${p.id}:${p.state}`;
    if (end && !this.announced.has(key)) {
      this.announced.add(key);
      this.announce(p);
    }
  }

  private announce(p: Plan) {
    const label = planLabel(p);
    const open = 'Open Plan';
    const say = p.state === 'held' || p.state === 'failed' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const text = p.state === 'draft' ? `${label}: the steps are written. Review them, then Run.` : `${label}: ${planStateWords(p)}${p.why ? ` — ${truncate(p.why, 300)}` : ''}`;
    void say(text, open).then((c) => { if (c === open) this.open(p.id); });
  }

  /** Whether a task is a plan's (its architect, or a step's attempt) that the plan goes on with. */
  owns(taskId: string): boolean {
    for (const p of this.plans.values()) {
      if (p.state !== 'drafting' && p.state !== 'running' && p.state !== 'draft') continue;
      if (p.architectTaskId === taskId || p.steps.some((s) => s.taskIds?.includes(taskId))) return true;
    }
    return false;
  }

  /** Whether a task is any plan's. */
  contains(taskId: string): boolean {
    for (const p of this.plans.values()) {
      if (p.architectTaskId === taskId || p.steps.some((s) => s.taskIds?.includes(taskId))) return true;
    }
    return false;
  }

  // ---- tree rows ----

  node(kind: PlanNode['kind'], id: string): PlanNode {
    const key = `${kind}:${id}`;
    let n = this.nodes.get(key);
    if (!n) {
      n = { kind, id } as PlanNode;
      this.nodes.set(key, n);
    }
    return n;
  }

  /** The plans the Tasks view shows first: those under way, and those that ended in the last half hour. */
  roots(): PlanNode[] {
    const now = Date.now();
    return [...this.plans.values()]
      .filter((p) => !p.endedAt || now - Date.parse(p.endedAt) < shownAfterEndMs)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .map((p) => this.node('plan', p.id));
  }

  children(n: PlanNode): PlanNode[] {
    if (n.kind !== 'plan') return [];
    return (this.plans.get(n.id)?.steps ?? []).map((s) => this.node('planStep', `${n.id}/${s.id}`));
  }

  parent(n: PlanNode): PlanNode | undefined {
    return n.kind === 'planStep' ? this.node('plan', n.id.split('/')[0]) : undefined;
  }

  private step(n: PlanNode): [Plan, PlanStep] | undefined {
    const [planId, stepId] = n.id.split('/');
    const p = this.plans.get(planId);
    const s = p?.steps.find((x) => x.id === stepId);
    return p && s ? [p, s] : undefined;
  }

  treeItem(n: PlanNode): vscode.TreeItem {
    if (n.kind === 'plan') {
      const p = this.plans.get(n.id);
      if (!p) return new vscode.TreeItem('(gone)');
      const item = new vscode.TreeItem(planLabel(p), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `plan:${p.id}`;
      item.description = planStateWords(p);
      item.iconPath = new vscode.ThemeIcon(p.state === 'held' || p.state === 'failed' ? 'warning' : p.state === 'done' ? 'check-all' : 'list-tree');
      item.contextValue = `plan ${p.state}`;
      item.command = { command: 'familiar.openPlan', title: 'Open Plan', arguments: [p.id] };
      const md = new vscode.MarkdownString();
      md.appendText(`${planLabel(p)} — ${planStateWords(p)}\n\n`);
      if (p.why) md.appendText(truncate(p.why, 500) + '\n\n');
      md.appendText(graphLine(p.steps));
      const totals = totalsText(p.totals);
      if (totals) md.appendText('\n\n' + totals);
      item.tooltip = md;
      item.accessibilityInformation = { label: `${planLabel(p)}, ${planStateWords(p)}` };
      return item;
    }
    const found = this.step(n);
    if (!found) return new vscode.TreeItem('(gone)');
    const [p, s] = found;
    const item = new vscode.TreeItem(s.title, vscode.TreeItemCollapsibleState.None);
    item.id = `planStep:${n.id}`;
    item.description = (s.needs.length ? `after ${s.needs.join(', ')} · ` : '') + stepLine(s);
    item.iconPath = stepIcon(s);
    item.contextValue = `planStep ${s.state}`;
    item.command = s.taskId
      ? { command: 'familiar.showTask', title: 'Show Task', arguments: [s.taskId] }
      : { command: 'familiar.openPlan', title: 'Open Plan', arguments: [p.id] };
    item.tooltip = `${s.title} [${s.id}] — ${stepStateWords(s)}${s.why ? `\n${truncate(s.why, 500)}` : ''}`;
    item.accessibilityInformation = { label: `${s.title}, ${stepLine(s)}` };
    return item;
  }

  // ---- commands ----

  /** New Plan…: a goal, which an architect breaks into steps. */
  async newPlan() {
    const client = await this.f.whenConnected();
    const goal = await vscode.window.showInputBox({
      title: 'New Plan',
      prompt: 'The goal: an architect breaks it into steps that agents carry out in parallel, each merged and checked as it is done. You review the steps before anything runs.',
      placeHolder: 'e.g. Add OAuth login: backend, UI, migration, docs, tests',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'Say what the plan is for.'),
    });
    if (!goal?.trim()) return;
    const p = await client.request('plan/create', { goal: goal.trim() });
    client.plans.set(p.id, p);
    this.f.tree.refresh();
    this.open(p.id);
  }

  /** Opens (or shows) the plan's view. */
  open(id: string) {
    const v = this.views.get(id);
    if (v) return v.panel.reveal();
    const p = this.plans.get(id);
    const panel = vscode.window.createWebviewPanel('familiar.plan', p ? planLabel(p) : 'Plan', vscode.ViewColumn.Active, this.options());
    this.attach(panel, id);
  }

  private options(): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'media')], retainContextWhenHidden: true };
  }

  private attach(panel: vscode.WebviewPanel, id: string) {
    const v = new PlanView(this.f, this, panel, id, this.extensionUri);
    this.views.set(id, v);
    panel.onDidDispose(() => { if (this.views.get(id) === v) this.views.delete(id); v.dispose(); });
  }

  /** Runs one of the plan's methods, saying a refusal in its own words. */
  async act<M extends 'plan/run' | 'plan/cancel' | 'plan/retry' | 'plan/skip' | 'plan/undo'>(method: M, params: Methods[M]['params'], done?: string): Promise<Plan | undefined> {
    const client = await this.f.whenConnected();
    try {
      const p = await client.request(method, params);
      client.plans.set(p.id, p);
      this.updated(p);
      if (done) info(done);
      return p;
    } catch (err: any) {
      if (err?.code === Code.InvalidParams || err?.code === Code.FailedPrecondition || err?.code === Code.NotFound) {
        void vscode.window.showWarningMessage(err.message);
        return undefined;
      }
      throw err;
    }
  }

  async undo(id: string) {
    const p = this.plans.get(id);
    const merged = p?.steps.filter((s) => s.state === 'merged').length ?? 0;
    const yes = 'Undo Plan';
    const pick = await vscode.window.showWarningMessage(
      `Take back the plan's ${merged === 1 ? 'merge' : `${merged} merges`} from ${p?.baseRef ?? 'the base'}, newest first? Each step's work stays in its task's branch.`,
      { modal: true }, yes);
    if (pick !== yes) return;
    await this.act('plan/undo', { id }, 'The plan\'s merges were taken back.');
  }
}

function stepIcon(s: PlanStep): vscode.ThemeIcon {
  const c = (id: string) => new vscode.ThemeColor(id);
  switch (s.state) {
    case 'merged': case 'done': return new vscode.ThemeIcon('check', c('charts.green'));
    case 'running': return new vscode.ThemeIcon('pulse', c('charts.blue'));
    case 'ready': case 'merging': return new vscode.ThemeIcon('git-pull-request', c('charts.green'));
    case 'failed': return new vscode.ThemeIcon('error', c('errorForeground'));
    case 'held': return new vscode.ThemeIcon('debug-pause', c('notificationsWarningIcon.foreground'));
    case 'skipped': case 'cancelled': case 'undone': return new vscode.ThemeIcon('circle-slash');
  }
  return new vscode.ThemeIcon('clock');
}

/** One plan in an editor tab. */
class PlanView {
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly f: Host, private readonly plans: Plans, readonly panel: vscode.WebviewPanel, private readonly id: string, extensionUri: vscode.Uri) {
    const w = panel.webview;
    const nonce = Array.from({ length: 32 }, () => Math.floor(Math.random() * 36).toString(36)).join('');
    const media = (file: string) => w.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', file));
    w.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${w.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${media('taskview.css')}"><link rel="stylesheet" href="${media('planview.css')}"></head>
<body class="plan"><div id="head"></div><div id="problems"></div><div id="graph"></div><ol id="steps"></ol>
<div id="edit" class="bar"></div><div id="error" class="error" role="alert"></div>
<script nonce="${nonce}" src="${media('planview.js')}"></script></body></html>`;
    this.subs.push(w.onDidReceiveMessage((m) => void this.receive(m).catch((err) => this.fail(err))));
    this.show();
  }

  dispose() {
    for (const d of this.subs) d.dispose();
  }

  /** Sends the plan as it is now. */
  show() {
    const p = this.f.client?.plans.get(this.id);
    if (!p) return;
    this.panel.title = planLabel(p);
    void this.panel.webview.postMessage({
      type: 'plan', plan: p, label: planLabel(p), state: planStateWords(p), totals: totalsText(p.totals), graph: graphLine(p.steps),
      editable: editable(p),
      steps: p.steps.map((s) => ({ id: s.id, line: stepLine(s), editable: stepEditable(s), retry: ['failed', 'cancelled', 'skipped'].includes(s.state), skip: ['failed', 'held', 'pending'].includes(s.state) && p.state !== 'draft' })),
    });
  }

  private fail(err: any) {
    const field = err?.data?.field ? ` (${err.data.field})` : '';
    void this.panel.webview.postMessage({ type: 'error', message: `${err?.message ?? err}${field}` });
  }

  private async receive(m: any) {
    switch (m?.type) {
      case 'ready':
        return this.show();
      case 'save': {
        const steps = m.steps as PlanStepSpec[];
        const p = await (await this.f.whenConnected()).request('plan/update', { id: this.id, steps });
        this.f.client?.plans.set(p.id, p);
        this.plans.updated(p);
        void this.panel.webview.postMessage({ type: 'saved' });
        return;
      }
      case 'run': {
        const p = await (await this.f.whenConnected()).request('plan/run', { id: this.id });
        this.f.client?.plans.set(p.id, p);
        return this.plans.updated(p);
      }
      case 'cancel':
        await this.plans.act('plan/cancel', { id: this.id });
        return;
      case 'undo':
        return this.plans.undo(this.id);
      case 'retry':
        await this.plans.act('plan/retry', { id: this.id, step: m.step });
        return;
      case 'skip':
        await this.plans.act('plan/skip', { id: this.id, step: m.step });
        return;
      case 'openTask':
        return vscode.commands.executeCommand('familiar.showTask', m.id);
    }
  }
}


