// The Familiar extension: a view of the tasks familiar runs, their
// terminals, their questions, and their changes. All protocol work is in
// FamiliarClient; this file is the connection and the status bar, and
// wires the modules that turn it into VS Code UI: tree.ts (the Tasks view),
// details.ts, questions.ts, changes.ts (diff, merge, undo), terminals.ts.

import * as vscode from 'vscode';
import * as fs from 'fs';
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import { BinaryError, describeSource, resolveFamiliar } from './binary';
import { FamiliarClient } from './client';
import { clock, rowTask, counts, plural, secondsLeft, secondsUntil, EndAnnouncer, endNotice, TaskEnd, settingsFrom, stillEnded, taskLabel } from './model';
import type { Policy, SettingsUpdate, Task, TaskCompletedNotification, TaskCreateParams, TaskResult, TaskTextResult } from './protocol';
import { Code, statusHoldsWorktree } from './protocol';
import { TaskTree, Node } from './tree';
import { DetailsProvider } from './details';
import { Changes, TextProvider } from './changes';
import { Terminals } from './terminals';
import { Questions } from './questions';
import { TaskViews } from './taskview';
import { Mentions } from './mentions';
import { NewTaskForm } from './newtask';
import { History } from './history';
import { move } from './queue';
import { autonomyWarning, showGrants } from './grants';
import { MergeQueue } from './mergequeue';
import { Plans } from './plans';
import { changeMode } from './modes';
import { skillsChanged } from './skills';
import { addPreset, checkMcpServers, settingServers } from './mcp';
import { serverMessage } from './controls';
import { readPolicyFile } from './policyfile';
import { error, gitTop, info, run, slug, trace, traceFile, warn } from './ui';

let ext: Familiar | undefined;

/** With tracing on: the extension host's CPU time and event-loop delay, once a second. */
function traceHost(context: vscode.ExtensionContext) {
  if (!traceFile) return;
  const { monitorEventLoopDelay } = require('perf_hooks') as typeof import('perf_hooks');
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  let cpu = process.cpuUsage();
  const timer = setInterval(() => {
    const d = process.cpuUsage(cpu);
    cpu = process.cpuUsage();
    trace({ ev: 'host', cpuMs: Math.round((d.user + d.system) / 1000), lagP99Ms: Math.round(lag.percentile(99) / 1e6), lagMaxMs: Math.round(lag.max / 1e6) });
    lag.reset();
  }, 1000);
  context.subscriptions.push({ dispose: () => { clearInterval(timer); lag.disable(); } });
}

export async function activate(context: vscode.ExtensionContext) {
  traceHost(context);
  ext = new Familiar(context);
  context.subscriptions.push(ext);
  await ext.start();
  return ext.api();
}

export async function deactivate() {
  await ext?.client?.detach();
}


export class Familiar implements vscode.Disposable {
  client?: FamiliarClient;
  root?: string;
  familiarPath?: string;
  readonly log: vscode.LogOutputChannel;
  private doctorTerminal?: vscode.Terminal;
  private policyWatcher?: vscode.Disposable;
  private readonly disposables: vscode.Disposable[] = [];
  readonly tree = new TaskTree(this);
  private view!: vscode.TreeView<Node>;
  private readonly status: vscode.StatusBarItem;
  readonly terminals = new Terminals(this);
  readonly questions = new Questions(this);
  readonly changes = new Changes(this);
  readonly texts = new TextProvider();
  readonly mentions = new Mentions();
  readonly ends = new EndAnnouncer();
  readonly history = new History(this);
  readonly queue = new MergeQueue(this);
  readonly plans: Plans;
  private readonly details = new DetailsProvider(this);
  readonly taskViews: TaskViews;
  private readonly newTaskForm: NewTaskForm;
  private ticker?: NodeJS.Timeout;
  private seqSave?: NodeJS.Timeout;
  undoWindowSec = 300;
  private lastShown?: string;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.taskViews = new TaskViews(this, context.extensionUri);
    this.plans = new Plans(this, context.extensionUri);
    this.newTaskForm = new NewTaskForm(this, context.workspaceState, context.extensionUri);
    this.disposables.push(this.terminals, this.taskViews, this.queue, this.plans, this.tree, this.mentions);
    this.log = vscode.window.createOutputChannel('Familiar', { log: true });
    this.status = vscode.window.createStatusBarItem('familiar.status', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'Familiar';
    this.status.command = 'workbench.view.extension.familiar';
    this.disposables.push(this.log, this.status);
  }

  api() {
    return { client: () => this.client, shownAt: this.questions.shownAt };
  }

  dispose() {
    if (this.ticker) clearInterval(this.ticker);
    this.policyWatcher?.dispose();
    for (const d of this.disposables) d.dispose();
  }

  task(id: string): Task | undefined {
    return this.client?.tasks.get(id);
  }

  async start() {
    const reg = (id: string, fn: (...args: any[]) => any) =>
      this.disposables.push(vscode.commands.registerCommand(id, async (...args) => {
        try {
          return await fn(...args);
        } catch (err: any) {
          this.fail(err);
        }
      }));
    this.view = vscode.window.createTreeView('familiar.tasks', { treeDataProvider: this.tree, showCollapseAll: false });
    this.disposables.push(
      this.view,
      // Rows keep their places while the person works in the tree (tree.ts touched).
      this.view.onDidChangeSelection(() => this.tree.touched()),
      this.view.onDidExpandElement(() => this.tree.touched()),
      this.view.onDidCollapseElement(() => this.tree.touched()),
      vscode.workspace.registerTextDocumentContentProvider('familiar-task', this.details),
      vscode.workspace.registerTextDocumentContentProvider('familiar-diff', this.changes.diffs),
      vscode.workspace.registerTextDocumentContentProvider('familiar-text', this.texts),
      vscode.workspace.onDidChangeConfiguration((e) => this.configChanged(e)),
    );
    const id = (arg: any): string => {
      const v = typeof arg === 'string' ? arg : arg?.kind === 'task' ? arg.id : undefined;
      if (v) return v;
      const sel = this.view.selection.find((n) => n.kind === 'task');
      if (sel && sel.kind === 'task') return sel.id;
      // From the palette: the task whose details are in front, else the last one looked at.
      const doc = vscode.window.activeTextEditor?.document.uri;
      if (doc?.scheme === 'familiar-task') return doc.path.split('/')[1];
      if (this.lastShown && this.task(this.lastShown)) return this.lastShown;
      throw new Error('Select a task in the Familiar view first.');
    };
    reg('familiar.newTask', () => this.newTask(false));
    reg('familiar.newTaskFromEditor', (uri?: vscode.Uri) => this.newTask(true, uri));
    reg('familiar.refresh', () => this.reconnect());
    reg('familiar.reconnect', () => this.reconnect());
    // The commands on a task, each twice: familiar.X from the palette (or a
    // caller with an id) takes the selected task, else the one in front;
    // familiar.row.X, what the tree's row menus run, takes its row or does
    // nothing (rowTask).
    const onTask: [string, (id: string, a: any, b: any) => unknown][] = [
      ['openTerminal', (t) => this.terminals.openTerminal(t)],
      ['openTask', (t) => this.showTask(t, false)],
      ['showDetails', (t) => this.showDetails(t)],
      ['answer', (t) => this.questions.answer(t)],
      ['showChanges', (t) => this.changes.showChanges(t)],
      ['merge', (t) => this.changes.merge(t)],
      ['mergeFiles', (t) => this.changes.mergeFiles(t)],
      ['undo', (t) => this.changes.undo(t)],
      ['pause', (t) => this.act('task/pause', t, 'Paused')],
      ['resume', (t) => this.act('task/resume', t, 'Resumed')],
      ['cancel', (t) => this.cancel(t)],
      ['retry', (t) => this.act('task/retry', t, 'Retrying')],
      ['continue', (t) => this.continueTask(t)],
      ['remove', (t) => this.remove(t)],
      ['openWorktree', (t) => this.openWorktree(t)],
      ['terminalInWorktree', (t) => this.terminalInWorktree(t)],
      ['moveUp', (t) => move(this, t, -1)],
      ['moveDown', (t) => move(this, t, 1)],
      // From a menu the second argument is the selection, not a mode.
      ['setMode', (t, _a, mode) => changeMode(this, t, typeof mode === 'string' ? mode as any : undefined)],
    ];
    for (const [name, fn] of onTask) {
      reg(`familiar.${name}`, (a, b) => fn(id(a), a, b));
      reg(`familiar.row.${name}`, (a, b) => fn(rowTask(a), a, b));
    }
    reg('familiar.showTask', (a) => this.showTask(id(a), typeof a === 'string'));
    // The keys of the conversation: they act on the task view in front, else the selected task.
    const front = (a: any) => (typeof a === 'string' ? a : this.taskViews.activeTask() ?? id(a));
    reg('familiar.send', async (a) => {
      const t = front(a);
      await this.taskViews.open(t, false);
      this.taskViews.focusMessage(t);
    });
    reg('familiar.stop', (a) => this.taskViews.stop(front(a)));
    reg('familiar.allow', (a) => this.answerInFront(front(a), 'allow'));
    reg('familiar.deny', (a) => this.answerInFront(front(a), 'deny'));
    reg('familiar.nextQuestion', () => this.nextQuestion());
    reg('familiar.answerPrompt', (taskId: string, questionId: string, choice: string) => this.questions.answerPrompt(taskId, questionId, choice));
    reg('familiar.searchTasks', () => this.history.search());
    reg('familiar.clearSearch', () => this.history.clearSearch());
    reg('familiar.showMore', (g) => this.tree.showMore(g?.kind === 'more' ? g.id : g));
    reg('familiar.clearFinished', () => this.history.clearFinished());
    reg('familiar.showArchived', () => this.history.showArchived());
    reg('familiar.grants', () => showGrants(this));
    reg('familiar.mergeAllReady', () => this.queue.mergeAllReady());
    reg('familiar.cancelQueue', () => this.queue.cancel());
    reg('familiar.undoQueue', () => this.queue.undo());
    reg('familiar.dismissQueue', () => this.queue.dismiss());
    const planId = (arg: any): string | undefined => (typeof arg === 'string' ? arg : arg?.kind === 'plan' ? arg.id : undefined);
    reg('familiar.newPlan', () => this.plans.newPlan());
    reg('familiar.openPlan', (arg) => { const id = planId(arg); if (id) this.plans.open(id); });
    reg('familiar.runPlan', (arg) => { const id = planId(arg); if (id) return this.plans.act('plan/run', { id }); });
    reg('familiar.cancelPlan', (arg) => { const id = planId(arg); if (id) return this.plans.act('plan/cancel', { id }, 'The plan is cancelled; what merged stays merged until Undo Plan.'); });
    reg('familiar.undoPlan', (arg) => { const id = planId(arg); if (id) return this.plans.undo(id); });
    reg('familiar.checkMcpServers', () => checkMcpServers(this));
    reg('familiar.addMcpPreset', () => addPreset(this));
    reg('familiar.runDoctor', () => this.runDoctor());
    reg('familiar.showLog', () => this.log.show());
    this.updateStatus();
    this.ticker = setInterval(() => this.tick(), 1000);

    if (process.platform === 'win32') {
      void this.offerWSL();
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== 'file') {
      this.status.text = '$(hubot) Familiar: open a folder';
      this.status.show();
      return;
    }
    if (!(await this.findBinary())) return;
    const top = await gitTop(folder.uri.fsPath);
    if (!top) {
      void this.offerGitInit(folder.uri.fsPath);
      return;
    }
    this.root = top;
    await this.connect();
  }

  /**
   * Finds the familiar to run (binary.ts: familiar.path, else the binary
   * this VSIX carries, else PATH) and says in the log which one it is; or
   * says why there is none, a binary of another protocol included.
   */
  private async findBinary(): Promise<boolean> {
    try {
      const b = await resolveFamiliar({
        configured: vscode.workspace.getConfiguration('familiar').get<string>('path', ''),
        extensionPath: this.context.extensionPath,
      });
      this.familiarPath = b.path;
      this.log.info(`running ${b.path} (${describeSource(b.source)}): familiar ${b.version}, protocol ${b.protocolVersion}`);
      return true;
    } catch (err: any) {
      this.familiarPath = undefined;
      const msg = err instanceof BinaryError ? err.message : String(err?.message ?? err);
      this.log.error(msg);
      this.status.text = '$(hubot) Familiar: no familiar to run';
      this.status.show();
      const pick = await error(`Familiar: ${msg}`, 'Open Settings');
      if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', 'familiar.path');
      return false;
    }
  }

  /**
   * familiar runs on Linux and macOS; on a Windows host it runs inside WSL,
   * where this extension (extensionKind workspace) runs next to the code.
   */
  private async offerWSL() {
    this.status.text = '$(hubot) Familiar: open the folder in WSL';
    this.status.show();
    const canReopen = (await vscode.commands.getCommands(true)).includes('remote-wsl.reopenInWSL');
    const action = canReopen ? 'Reopen Folder in WSL' : 'Install the WSL Extension';
    const pick = await info('Familiar runs inside WSL on Windows: reopen this folder in WSL, and Familiar runs its agents there, next to the code.', action);
    if (pick === 'Reopen Folder in WSL') void vscode.commands.executeCommand('remote-wsl.reopenInWSL');
    else if (pick) void vscode.commands.executeCommand('workbench.extensions.installExtension', 'ms-vscode-remote.remote-wsl');
  }

  private async offerGitInit(dir: string) {
    this.status.text = '$(hubot) Familiar: not a git repository';
    this.status.show();
    const pick = await warn(
      `Familiar: ${path.basename(dir)} is not a git repository. Familiar gives every task its own git worktree.`, 'git init');
    if (pick !== 'git init') return;
    await run('git', ['init'], dir);
    // Worktrees need a first commit to branch from.
    await run('git', ['commit', '--allow-empty', '-m', 'Initial commit'], dir).catch((err) =>
      this.log.warn(`initial commit: ${err.message}`));
    this.root = (await gitTop(dir)) ?? dir;
    void info(`Familiar: made ${path.basename(dir)} a git repository.`);
    await this.connect();
  }

  private async connect() {
    if (!this.policyWatcher) this.watchPolicyFile();
    const lastSeq = this.context.workspaceState.get<number>('familiar.lastSeq') ?? 0;
    const client = new FamiliarClient({
      familiarPath: this.familiarPath!,
      workspaceRoot: this.root!,
      clientInfo: { name: 'vscode', version: vscode.version },
      settings: () => this.settings(),
      lastSeq,
      log: (level, msg) => {
        if (level === 'error') this.log.error(msg);
        else if (level === 'warn') this.log.warn(msg);
        else if (level === 'debug') this.log.debug(msg);
        else this.log.info(msg);
      },
    });
    this.client = client;
    client.onState((s) => {
      if (s === 'connected') this.firstConnected.resolve(client);
      this.updateStatus();
      if (s === 'connected' && client.reconnects > 0) vscode.window.setStatusBarMessage('$(check) Familiar: reconnected', 4000);
    });
    client.onExit((e) => {
      void warn(
        `Familiar: familiar stopped (${e.code !== null ? 'exit code ' + e.code : 'signal ' + e.signal}); reconnecting…`, 'Show Log')
        .then((p) => p && this.log.show());
    });
    client.onSeq((seq) => {
      if (this.seqSave) return;
      this.seqSave = setTimeout(() => {
        this.seqSave = undefined;
        void this.context.workspaceState.update('familiar.lastSeq', client.lastSeq);
      }, 500);
    });
    client.onTasks(() => {
      // (Re)connected: output notifications may have been missed meanwhile.
      this.terminals.wakeAll();
      this.queue.loaded();
      this.plans.loaded();
      this.tree.refresh();
      this.updateStatus();
      // Ends replayed from what was missed, announced if the task is still so
      // (not a block it has been continued past meanwhile).
      for (const d of this.replayedEnds.splice(0)) {
        const t = client.tasks.get(d.end.id);
        if (t && stillEnded(t, d.end)) void this.announce(d.end, t, d.result ?? t.result);
      }
      for (const t of client.tasks.values()) {
        if (t.pendingQuestion) this.questions.prompt(t, t.pendingQuestion);
        // Ends from before this connection are not news.
        this.ends.known(t);
      }
      // Prompts of questions that were answered while we were away.
      for (const [key, p] of this.questions.prompts) {
        const t = client.tasks.get(p.taskId);
        if (!t?.pendingQuestion || t.pendingQuestion.id !== p.questionId) this.questions.closePrompt(key, 'elsewhere');
      }
    });
    client.onTranscript((n) => this.taskViews.transcript(n));
    client.onQueue(([q]) => this.queue.updated(q));
    client.onPlan((p) => this.plans.updated(p));
    client.onHook((n) => this.taskViews.hook(n));
    client.onSkillsChanged(([n, meta]) => void skillsChanged(this, n, meta).catch((err) => this.fail(err)));
    client.onTask((t) => {
      // Archived (here or in another window): its row goes.
      if (t.archivedAt) {
        this.history.dropArchived([t.id]);
        return;
      }
      this.taskViews.taskChanged(t);
      if (t.status === 'waiting' && t.pendingQuestion) trace({ ev: 'waiting', task: t.id, question: t.pendingQuestion.id, updatedAt: t.updatedAt });
      this.tree.taskChanged(t.id);
      this.details.changed(t.id);
      this.statusSoon();
      // An older familiar announces a block only with task/updated.
      const end = this.ends.updated(t);
      if (end) this.announceSoon(end, t);
    });
    client.onOutput((o) => this.terminals.wake(o.id));
    client.onQuestion(([q]) => {
      trace({ ev: 'question', task: q.id, question: q.question.id });
      const t = client.tasks.get(q.id);
      if (t) this.questions.prompt(t, q.question);
      else void client.request<Task>('task/get', { id: q.id }).then((t) => this.questions.prompt(t, q.question));
    });
    client.onQuestionResolved(([r]) => this.questions.closePrompt(`${r.id}/${r.questionId}`, r.decidedBy));
    client.onCompleted(([c]) => void this.completed(c));
    client.onServerMessage(([m, meta]) => {
      this.log.info(`server: ${m.level}: ${m.text}`);
      // The warning before autonomy: once per workspace, with its setting.
      if (m.setting && autonomyWarning(this, this.context.workspaceState, m)) return;
      if (meta.replayed || m.level === 'info') return;
      const said = serverMessage(m.text, (id) => this.task(id)?.title);
      const text = `Familiar: ${said.text}`;
      if (m.level === 'error') void error(text, 'Show Log').then((p) => p && this.log.show());
      // The missing claude of initialize is shown (with its actions) by
      // checkClaude; every other warning is shown, those naming claude too
      // (an MCP server that failed inside claude).
      else if (!said.shownElsewhere) void warn(text);
    });
    try {
      const init = await client.start();
      this.log.info(`familiar ${init.serverInfo.version} serving ${init.workspace.root}; claude ${init.claude.available ? init.claude.version : 'missing'}`);
      this.checkClaude(init.claude);
    } catch (err: any) {
      this.log.error(`familiar did not start: ${err.message}`);
      void error(`Familiar: familiar did not start: ${err.message}`, 'Show Log', 'Run Doctor').then((p) => {
        if (p === 'Show Log') this.log.show();
        if (p === 'Run Doctor') void this.runDoctor();
      });
    }
  }

  private checkClaude(c: { available: boolean; version: string; problem?: string }) {
    if (c.available) return;
    const why = c.problem || 'the claude CLI (Claude Code) was not found';
    void warn(`Familiar: ${why}. Agents cannot start until it is installed.`, 'How to Install', 'Run Doctor').then((p) => {
      if (p === 'How to Install') void vscode.env.openExternal(vscode.Uri.parse('https://docs.anthropic.com/en/docs/claude-code/setup'));
      if (p === 'Run Doctor') void this.runDoctor();
    });
  }

  /**
   * Runs `familiar doctor` in a terminal of its own: its checks print as they
   * run, and its fixes are commands the person runs next to them. A
   * pseudoterminal rather than a shell running familiar, because doctor exits
   * non-zero when it finds a problem and VS Code alerts on that exit.
   */
  async runDoctor() {
    const familiar = this.familiarPath;
    if (!familiar) throw new Error('familiar was not found; set "familiar.path".');
    const cwd = this.root ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const write = new vscode.EventEmitter<string>();
    let child: ChildProcess | undefined;
    const lines = (d: string) => write.fire(d.replace(/\r?\n/g, '\r\n'));
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      open: () => {
        write.fire('$ familiar doctor\r\n');
        child = spawn(familiar, ['doctor'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout!.setEncoding('utf8').on('data', lines);
        child.stderr!.setEncoding('utf8').on('data', lines);
        child.on('error', (err) => lines(`cannot run familiar: ${err.message}\n`));
        child.on('close', (code) => lines(code === 0 ? '\nall checks passed\n' : `\ndoctor found problems (exit ${code ?? '?'})\n`));
      },
      close: () => child?.kill(),
    };
    this.doctorTerminal?.dispose();
    this.doctorTerminal = vscode.window.createTerminal({ name: 'Familiar: Doctor', pty, iconPath: new vscode.ThemeIcon('hubot') });
    this.doctorTerminal.show();
  }

  private async reconnect() {
    if (!this.client) return this.start();
    await this.client.restart();
  }

  private settings(): SettingsUpdate {
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
      const p = path.isAbsolute(file) ? file : path.join(this.root ?? '', file);
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
  private watchPolicyFile() {
    this.policyWatcher?.dispose();
    this.policyWatcher = undefined;
    const file = vscode.workspace.getConfiguration('familiar').get<string>('policyFile', '');
    if (!file) return;
    const p = path.isAbsolute(file) ? file : path.join(this.root ?? '', file);
    const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(path.dirname(p), path.basename(p)));
    const changed = () => this.configChanged({ affectsConfiguration: (s: string) => s === 'familiar' || s === 'familiar.policyFile' });
    w.onDidChange(changed);
    w.onDidCreate(changed);
    w.onDidDelete(changed);
    this.policyWatcher = w;
  }

  private async configChanged(e: vscode.ConfigurationChangeEvent) {
    if (!e.affectsConfiguration('familiar')) return;
    if (e.affectsConfiguration('familiar.policyFile')) this.watchPolicyFile();
    if (e.affectsConfiguration('familiar.path')) {
      if ((await this.findBinary()) && this.client) {
        // Leave without shutdown: agents of a shared familiar keep running.
        await this.client.detach();
        this.client = undefined;
        await this.connect();
      }
      return;
    }
    if (this.client?.state === 'connected') {
      try {
        const settings = this.settings();
        // The setting removed: the session's servers go too (mcpServers is replaced whole).
        if (e.affectsConfiguration('familiar.mcpServers') && !settings.mcpServers) settings.mcpServers = {};
        const s = await this.client.request<any>('settings/update', { settings });
        if (typeof s?.undoWindowSec === 'number') this.undoWindowSec = s.undoWindowSec;
        this.log.info('settings updated');
      } catch (err: any) {
        this.fail(err);
      }
    }
  }

  // ---- status bar, ticker ----

  updateStatus() {
    const s = this.status;
    const c = this.client;
    if (!c) return;
    if (c.state === 'connecting' || c.state === 'disconnected') {
      s.text = c.state === 'connecting' && c.reconnects === 0 && !c.init ? '$(loading~spin) Familiar' : '$(debug-disconnect) Familiar: reconnecting…';
      s.backgroundColor = c.state === 'disconnected' ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
      s.tooltip = 'Familiar: connecting to familiar';
      s.show();
      return;
    }
    const n = counts(c.tasks.values());
    const parts = [`$(hubot) ${n.running} running`];
    if (n.waiting) {
      const q = this.nextExpiring();
      parts.push(`$(bell) ${n.waiting} waiting${q ? ` (${clock(q)})` : ''}`);
    }
    if (n.queued) parts.push(`$(clock) ${n.queued} queued`);
    if (n.ready) parts.push(`$(git-pull-request) ${n.ready} to merge`);
    // A blocked task waits on the person too (Continue, Retry): it stays counted until they act.
    if (n.blocked) parts.push(`$(error) ${n.blocked} blocked`);
    s.text = parts.join('  ');
    s.backgroundColor = n.waiting ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    s.tooltip = `Familiar: ${n.running} running, ${n.waiting} waiting on you, ${n.queued} queued, ${n.ready} ready to merge, ${n.blocked} blocked`;
    s.show();
    this.view.badge = n.waiting ? { value: n.waiting, tooltip: `${plural(n.waiting, 'task')} waiting on you` } : undefined;
  }

  private statusTimer?: NodeJS.Timeout;
  /** updateStatus, at most four times a second. */
  private statusSoon() {
    if (this.statusTimer) return;
    this.statusTimer = setTimeout(() => {
      this.statusTimer = undefined;
      this.updateStatus();
    }, 250);
  }

  /** Seconds until the first pending question times out. */
  private nextExpiring(): number | undefined {
    let min: number | undefined;
    for (const t of this.client?.tasks.values() ?? []) {
      const e = t.pendingQuestion?.expiresAt;
      if (!e) continue;
      const left = secondsLeft(e, Date.now());
      if (left !== undefined && (min === undefined || left < min)) min = left;
    }
    return min;
  }

  private tick() {
    const c = this.client;
    if (!c) return;
    let live = false;
    let counting = false;
    for (const t of c.tasks.values()) {
      // Queued or at work: its elapsed time and estimate move.
      if (statusHoldsWorktree(t.status)) live = true;
      // An undo's countdown, and its end takes the Undo item away.
      else if (t.status === 'merged' && (secondsUntil(t.undoableUntil, Date.now()) ?? -1) > -5) counting = true;
    }
    if (live || counting) this.tree.tick();
    if (live || this.questions.prompts.size) this.updateStatus();
    for (const p of this.questions.prompts.values()) p.tick?.();
    // A details document in view shows elapsed time and countdowns too.
    for (const e of vscode.window.visibleTextEditors) {
      const uri = e.document.uri;
      if (uri.scheme !== 'familiar-task') continue;
      const t = c.tasks.get(uri.path.split('/')[1]);
      if (t && statusHoldsWorktree(t.status)) this.details.changed(t.id);
    }
  }

  // ---- new task ----

  /** New Task: the form, with what the editor adds this time (shown there, removable). */
  private async newTask(fromEditor: boolean, uri?: vscode.Uri) {
    await this.newTaskForm.open(this.editorHints(fromEditor, uri));
  }

  /** The current file and selection as hints.files / hints.notes. */
  private editorHints(fromEditor: boolean, uri?: vscode.Uri): TaskCreateParams['hints'] {
    const ed = vscode.window.activeTextEditor;
    const target = uri ?? (fromEditor ? ed?.document.uri : undefined) ?? (ed && !ed.selection.isEmpty ? ed.document.uri : undefined);
    if (!target || target.scheme !== 'file' || !this.root) return undefined;
    const rel = path.relative(this.root, target.fsPath).split(path.sep).join('/');
    if (rel.startsWith('..')) return undefined;
    const hints: NonNullable<TaskCreateParams['hints']> = { files: [rel] };
    if (ed && ed.document.uri.toString() === target.toString() && !ed.selection.isEmpty) {
      const s = ed.selection;
      hints.notes = `Selected in ${rel} lines ${s.start.line + 1}-${s.end.line + 1}:\n\`\`\`\n${ed.document.getText(s)}\n\`\`\``;
    }
    return hints;
  }


  // ---- details ----

  /** The task view (a tree click: in the preview tab, the focus kept in the tree). */
  private async showTask(id: string, preview: boolean) {
    this.lastShown = id;
    const t = this.task(id);
    if (!t) throw new Error('That task is gone.');
    await this.taskViews.open(id, preview);
    if (t.status === 'waiting' && t.pendingQuestion) this.questions.prompt(t, t.pendingQuestion);
  }

  /** Open Worktree: a new window on the task's worktree, to try its change before keeping it. */
  private async openWorktree(id: string) {
    const wt = this.task(id)?.worktree?.path;
    if (!wt || !fs.existsSync(wt)) throw new Error('That task has no worktree on disk (removed after its merge, or not made yet).');
    trace({ ev: 'openWorktree', task: id });
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(wt), { forceNewWindow: true });
  }

  /** Terminal in Worktree: a shell of the person's own in the task's worktree (not the agent's terminal). */
  private terminalInWorktree(id: string) {
    const t = this.task(id);
    const wt = t?.worktree?.path;
    if (!t || !wt || !fs.existsSync(wt)) throw new Error('That task has no worktree on disk (removed after its merge, or not made yet).');
    const term = vscode.window.createTerminal({ name: `Worktree: ${taskLabel(t)}`, cwd: wt, iconPath: new vscode.ThemeIcon('git-branch') });
    term.show();
  }

  /** Allow or Deny from a key: the permission the task in front waits on. */
  private async answerInFront(id: string, action: 'allow' | 'deny') {
    const q = this.task(id)?.pendingQuestion;
    if (!q || q.kind !== 'permission') {
      vscode.window.setStatusBarMessage(`$(info) Familiar: ${q ? 'that task asks a question: answer it in its view' : 'that task asks nothing'}`, 4000);
      return;
    }
    await this.questions.fromView(id, q.id, { action });
  }

  /** The next task waiting on the person, after the one in front (oldest question first): its view, its card. */
  private async nextQuestion() {
    const waiting = [...(this.client?.tasks.values() ?? [])].filter((t) => t.pendingQuestion && !t.archivedAt)
      .sort((a, b) => (a.updatedAt < b.updatedAt ? -1 : a.updatedAt > b.updatedAt ? 1 : 0));
    if (!waiting.length) {
      vscode.window.setStatusBarMessage('$(check) Familiar: no task is waiting on you', 4000);
      return;
    }
    const at = waiting.findIndex((t) => t.id === this.taskViews.activeTask());
    const next = waiting[(at + 1) % waiting.length];
    this.lastShown = next.id;
    await this.taskViews.open(next.id, false);
  }

  /** The details as a read-only document (for copying, searching). */
  private async showDetails(id: string) {
    this.lastShown = id;
    const t = this.task(id);
    if (!t) throw new Error('That task is gone.');
    const uri = vscode.Uri.from({ scheme: 'familiar-task', path: `/${id}/${slug(t.title)}.md` });
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
    if (t.status === 'waiting' && t.pendingQuestion) this.questions.prompt(t, t.pendingQuestion);
  }


  // ---- completion, diff, merge, undo ----

  /** A task/completed: every end of a task, announced once (see EndAnnouncer). */
  private async completed(c: TaskCompletedNotification) {
    let t = this.task(c.id);
    if (!t && this.client?.state === 'connected') t = await this.client.request<Task>('task/get', { id: c.id }).catch(() => undefined);
    const end = this.ends.completed(c, t);
    if (end) this.announceSoon(end, t, c.result);
  }

  /** Ends that arrived while catching up after a (re)connect: see onTasks. */
  private readonly replayedEnds: { end: TaskEnd; result?: TaskResult }[] = [];

  /**
   * Announces an end now, or, while the client replays what it missed, once
   * the task list is loaded: a replayed block may have been continued since.
   */
  private announceSoon(end: TaskEnd, t?: Task, result?: TaskResult) {
    if (this.client?.state === 'connected') void this.announce(end, t, result);
    else this.replayedEnds.push({ end, result });
  }

  /**
   * Shows one end of a task: ready to merge (or done with no changes) as
   * information, a block or a cancel the person did not ask for as a warning
   * naming the reason in words, each with the actions that fit it.
   */
  private async announce(end: TaskEnd, t?: Task, r: TaskResult | undefined = t?.result) {
    if (end.success && !vscode.workspace.getConfiguration('familiar').get('notifyOnCompletion', true)) return;
    if (end.success && this.queue.takes(end.id)) {
      this.log.info(`task ${end.id} is ready again; the merge queue takes it`);
      return;
    }
    if (end.success && this.plans.owns(end.id)) {
      // A plan merges its steps itself, and says when its steps are written
      // and when it ends: "ready to merge… Merge…" would offer what the
      // plan is about to do.
      this.log.info(`task ${end.id} ended; its plan takes it`);
      return;
    }
    const n = endNotice(t?.title ?? end.id, end, r && { changedFiles: r.changedFiles?.length ?? 0, costUsd: r.costUsd, summary: r.summary });
    trace({ ev: 'end', task: end.id, status: end.status, reason: end.reason, text: n.text, actions: n.actions });
    this.log.info(`task ${end.id} ended: ${end.status}${end.reason ? ` (${end.reason})` : ''}`);
    if (n.level === 'info' && vscode.window.state.focused && this.taskViews.activeTask() === end.id) {
      // The person is reading this task's conversation, where the end
      // shows: a notification would only cover its message box.
      vscode.window.setStatusBarMessage(`$(check) ${n.text.replace(/^Familiar · /, 'Familiar: ')}`, 5000);
      return;
    }
    try {
      const pick = await (n.level === 'warning' ? warn : info)(n.text, ...n.actions);
      switch (pick) {
        case 'Show Changes': return await this.changes.showChanges(end.id, true);
        case 'Merge…': return await this.changes.merge(end.id);
        case 'Continue…': return await this.continueTask(end.id);
        case 'Retry': return await this.act('task/retry', end.id, 'Retrying');
        case 'Open Terminal': return this.terminals.openTerminal(end.id);
        case 'Run Doctor': return await this.runDoctor();
      }
    } catch (err: any) {
      this.fail(err);
    }
  }


  async act(method: string, id: string, done: string) {
    const t = await this.connected().request<Task>(method, { id });
    this.client?.tasks.set(t.id, t);
    this.tree.refresh();
    vscode.window.setStatusBarMessage(`$(check) Familiar: ${done} "${t.title}"`, 3000);
  }

  private async cancel(id: string) {
    const t = this.task(id);
    // The modal has its own "Cancel" (keep going): the action must not be a second one.
    const pick = await warn(`Stop "${t ? taskLabel(t) : id}"? Its agent is stopped and the task cancelled; its worktree is kept, and Retry starts it again.`, { modal: true }, 'Stop Task');
    if (pick) await this.act('task/cancel', id, 'Cancelled');
  }

  async continueTask(id: string) {
    const t = this.task(id);
    const text = await vscode.window.showInputBox({ title: `Continue "${t?.title ?? id}"`, prompt: 'A follow-up message to the agent', ignoreFocusOut: true });
    if (!text) return;
    await this.connected().request<Task>('task/send', { id, text });
  }

  private async remove(id: string) {
    const t = this.task(id);
    const pick = await warn(`Remove "${t?.title ?? id}"? Its worktree is deleted and the task goes to the archive (Show Archived brings it back).`, { modal: true }, 'Remove', 'Remove with Branch');
    if (!pick) return;
    // archive: the row goes (a removed task's row used to stay).
    const params = { id, deleteBranch: pick === 'Remove with Branch', archive: true };
    try {
      await this.connected().request('task/remove', params);
    } catch (err: any) {
      if (err?.code !== Code.FailedPrecondition) throw err;
      const force = await warn(`Familiar: ${err.message}`, { modal: true }, 'Remove Anyway');
      if (!force) return;
      await this.connected().request('task/remove', { ...params, force: true });
    }
    this.history.dropArchived([id]);
  }

  /**
   * The whole of a text familiar showed clipped (a ref of task/text), paged;
   * at most 64 MB, past which the end is marked cut.
   */
  async text(id: string, ref: string): Promise<string> {
    const parts: string[] = [];
    let offset = 0, size = 0;
    for (;;) {
      const page = await this.connected().request<TaskTextResult>('task/text', { id, ref, offset, limit: 1 << 20 });
      parts.push(page.data);
      size += page.data.length;
      if (!page.truncated || page.nextOffset <= offset) break;
      offset = page.nextOffset;
      if (size > 64 << 20) {
        parts.push('\n[familiar: cut at 64 MB]');
        break;
      }
    }
    return parts.join('');
  }

  connected(): FamiliarClient {
    const c = this.client;
    if (!c || c.state !== 'connected') throw new Error('familiar is not connected yet.');
    return c;
  }

  /**
   * The client once connected: New Task run while familiar is still starting
   * (the first seconds of a window, or a reconnect) waits for it rather than
   * fail.
   */
  /** Resolves when a client first connects (a task view restored at a window's start waits for it). */
  readonly firstConnected = deferred<FamiliarClient>();

  async whenConnected(timeoutMs = 60000): Promise<FamiliarClient> {
    const c = this.client;
    if (!c) {
      // The window is starting: the client comes once familiar is found.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('familiar is not connected yet.')), timeoutMs); });
      try {
        await Promise.race([this.firstConnected.promise, late]);
      } finally {
        clearTimeout(timer);
      }
      return this.connected();
    }
    if (c.state === 'stopped') return this.connected();
    if (c.state === 'connected') return c;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { sub.dispose(); reject(new Error('familiar is not connected yet.')); }, timeoutMs);
      const sub = c.onState((st) => {
        if (st !== 'connected') return;
        clearTimeout(timer);
        sub.dispose();
        resolve();
      });
    });
    return this.connected();
  }

  fail(err: any) {
    const msg = err?.message ?? String(err);
    this.log.error(msg);
    void error(`Familiar: ${msg}`);
  }
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}
