// The Familiar extension: a view of the tasks familiar runs, their
// terminals, their questions, and their changes. All protocol work is in
// FamiliarClient; this file turns it into VS Code UI.

import * as vscode from 'vscode';
import * as fs from 'fs';
import * as path from 'path';
import { ChildProcess, execFile, spawn } from 'child_process';
import { BinaryError, describeSource, resolveFamiliar } from './binary';
import { FamiliarClient } from './client';
import { OutputPump } from './pump';
import { applyPatch, filePatch } from './patch';
import {
  clock, counts, describe, duration, groups, GroupId, isMultiSelect, permissionDetail, secondsLeft,
  tasksIn, truncate, undoable, blockedLabel, activityText, roughly, noLinks, EndAnnouncer, endNotice, groupOfTask, plural, TaskEnd, stillEnded,
} from './model';
import type { DiffResult, MergeStrategy, Mode, Policy, Question, SettingsUpdate, Task, TaskCompleted, TaskCreateParams, TaskResult, TaskType } from './protocol';
import { Code } from './protocol';

let ext: Familiar | undefined;

/**
 * With FAMILIAR_VSCODE_TRACE=FILE, timing points go to FILE as JSON lines
 * (the UI tests measure question latency from them). Off by default.
 */
const traceFile = process.env.FAMILIAR_VSCODE_TRACE;
function trace(ev: Record<string, unknown>) {
  if (!traceFile) return;
  try {
    fs.appendFileSync(traceFile, JSON.stringify({ at: Date.now(), ...ev }) + '\n');
  } catch {
    // Tracing never breaks the extension.
  }
}

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

type Node = { kind: 'group'; id: GroupId } | { kind: 'task'; id: string };

class Familiar implements vscode.Disposable {
  client?: FamiliarClient;
  root?: string;
  familiarPath?: string;
  private readonly log: vscode.LogOutputChannel;
  private doctorTerminal?: vscode.Terminal;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly tree = new TaskTree(this);
  private view!: vscode.TreeView<Node>;
  private readonly status: vscode.StatusBarItem;
  private readonly terminals = new Map<string, { term: vscode.Terminal; pump: OutputPump }>();
  private readonly prompts = new Map<string, Prompt>(); // key task/question
  private readonly resolved = new Map<string, string>(); // key → decidedBy
  private readonly ends = new EndAnnouncer();
  private readonly details = new DetailsProvider(this);
  private readonly diffs = new DiffProvider(this);
  private ticker?: NodeJS.Timeout;
  private seqSave?: NodeJS.Timeout;
  private undoWindowSec = 300;
  private lastShown?: string;
  /** Timestamps the UI tests read: question id → when its prompt was shown. */
  readonly shownAt = new Map<string, number>();

  constructor(private readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Familiar', { log: true });
    this.status = vscode.window.createStatusBarItem('familiar.status', vscode.StatusBarAlignment.Left, 50);
    this.status.name = 'Familiar';
    this.status.command = 'workbench.view.extension.familiar';
    this.disposables.push(this.log, this.status);
  }

  api() {
    return { client: () => this.client, shownAt: this.shownAt };
  }

  dispose() {
    if (this.ticker) clearInterval(this.ticker);
    for (const t of this.terminals.values()) t.pump.dispose();
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
      vscode.workspace.registerTextDocumentContentProvider('familiar-task', this.details),
      vscode.workspace.registerTextDocumentContentProvider('familiar-diff', this.diffs),
      vscode.workspace.onDidChangeConfiguration((e) => this.configChanged(e)),
      vscode.window.onDidCloseTerminal((t) => {
        for (const [id, v] of this.terminals) if (v.term === t) { v.pump.dispose(); this.terminals.delete(id); }
      }),
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
    reg('familiar.openTerminal', (a) => this.openTerminal(id(a)));
    reg('familiar.showTask', (a) => this.showTask(id(a)));
    reg('familiar.answer', (a) => this.answer(id(a)));
    reg('familiar.answerPrompt', (taskId: string, questionId: string, choice: string) => this.answerPrompt(taskId, questionId, choice));
    reg('familiar.showChanges', (a) => this.showChanges(id(a)));
    reg('familiar.merge', (a) => this.merge(id(a)));
    reg('familiar.undo', (a) => this.undo(id(a)));
    reg('familiar.pause', (a) => this.act('task/pause', id(a), 'Paused'));
    reg('familiar.resume', (a) => this.act('task/resume', id(a), 'Resumed'));
    reg('familiar.cancel', (a) => this.cancel(id(a)));
    reg('familiar.retry', (a) => this.act('task/retry', id(a), 'Retrying'));
    reg('familiar.continue', (a) => this.continueTask(id(a)));
    reg('familiar.remove', (a) => this.remove(id(a)));
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
      for (const v of this.terminals.values()) v.pump.wake();
      this.tree.refresh();
      this.updateStatus();
      // Ends replayed from what was missed, announced if the task is still so
      // (not a block it has been continued past meanwhile).
      for (const d of this.replayedEnds.splice(0)) {
        const t = client.tasks.get(d.end.id);
        if (t && stillEnded(t, d.end)) void this.announce(d.end, t, d.result ?? t.result);
      }
      for (const t of client.tasks.values()) {
        if (t.pendingQuestion) this.prompt(t, t.pendingQuestion);
        // Ends from before this connection are not news.
        this.ends.known(t);
      }
      // Prompts of questions that were answered while we were away.
      for (const [key, p] of this.prompts) {
        const t = client.tasks.get(p.taskId);
        if (!t?.pendingQuestion || t.pendingQuestion.id !== p.questionId) this.closePrompt(key, 'elsewhere');
      }
    });
    client.onTask((t) => {
      if (t.status === 'waiting' && t.pendingQuestion) trace({ ev: 'waiting', task: t.id, question: t.pendingQuestion.id, updatedAt: t.updatedAt });
      this.tree.taskChanged(t.id);
      this.details.changed(t.id);
      this.statusSoon();
      // An older familiar announces a block only with task/updated.
      const end = this.ends.updated(t);
      if (end) this.announceSoon(end, t);
    });
    client.onOutput((o) => this.terminals.get(o.id)?.pump.wake());
    client.onQuestion(([q]) => {
      trace({ ev: 'question', task: q.id, question: q.question.id });
      const t = client.tasks.get(q.id);
      if (t) this.prompt(t, q.question);
      else void client.request<Task>('task/get', { id: q.id }).then((t) => this.prompt(t, q.question));
    });
    client.onQuestionResolved(([r]) => this.closePrompt(`${r.id}/${r.questionId}`, r.decidedBy));
    client.onCompleted(([c]) => void this.completed(c));
    client.onServerMessage(([m, meta]) => {
      const text = `Familiar: ${m.text}`;
      this.log.info(`server: ${m.level}: ${m.text}`);
      if (meta.replayed || m.level === 'info') return;
      if (m.level === 'error') void error(text, 'Show Log').then((p) => p && this.log.show());
      // The claude warning of initialize is shown (with its actions) by checkClaude.
      else if (!/claude/i.test(m.text)) void warn(text);
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
    const s: SettingsUpdate = {
      maxConcurrent: c.get<number>('maxConcurrent', 3),
      defaultDriver: c.get<'pty' | 'stream'>('driver', 'pty'),
      approvalTimeoutSec: c.get<number>('approvalTimeoutSec', 300),
      agentNice: c.get<number>('agentNice', 10),
    };
    const policy = this.policy();
    if (policy) s.permissionPolicy = policy;
    return s;
  }

  private policy(): Policy | undefined {
    const c = vscode.workspace.getConfiguration('familiar');
    const file = c.get<string>('policyFile', '');
    if (file) {
      const p = path.isAbsolute(file) ? file : path.join(this.root ?? '', file);
      try {
        return JSON.parse(fs.readFileSync(p, 'utf8')) as Policy;
      } catch (err: any) {
        void error(`Familiar: cannot read the policy file ${p}: ${err.message}`);
        return undefined;
      }
    }
    const pol = c.get<Policy>('permissionPolicy');
    return pol && pol.default ? pol : undefined;
  }

  private async configChanged(e: vscode.ConfigurationChangeEvent) {
    if (!e.affectsConfiguration('familiar')) return;
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
        const s = await this.client.request<any>('settings/update', { settings: this.settings() });
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
    for (const t of c.tasks.values()) if (['running', 'starting', 'waiting', 'queued'].includes(t.status)) live = true;
    if (live) this.tree.tick();
    if (live || this.prompts.size) this.updateStatus();
    for (const p of this.prompts.values()) p.tick?.();
    // A details document in view shows elapsed time and countdowns too.
    for (const e of vscode.window.visibleTextEditors) {
      const uri = e.document.uri;
      if (uri.scheme !== 'familiar-task') continue;
      const t = c.tasks.get(uri.path.split('/')[1]);
      if (t && ['running', 'starting', 'waiting', 'queued'].includes(t.status)) this.details.changed(t.id);
    }
  }

  // ---- new task ----

  private async newTask(fromEditor: boolean, uri?: vscode.Uri) {
    const client = await this.whenConnected();
    const hints = this.editorHints(fromEditor, uri);
    const steps = 5;
    const where = hints?.files?.length ? ` — with ${hints.files.join(', ')}${hints.notes ? ' (selection)' : ''}` : '';
    // Each step's outcome, for the UI tests' trace: a step that never
    // returns, or returns dismissed, says where a stuck New Task stopped.
    const answered = <T>(step: number, v: T): T => {
      trace({ ev: 'newTask', step, answered: v !== undefined });
      return v;
    };
    const title = await vscode.window.showInputBox({
      title: `Familiar: New Task (1/${steps})${where}`, prompt: 'A short title for the task', ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : 'The task needs a title.'),
    }).then((v) => answered(1, v));
    if (title === undefined) return;
    const description = await vscode.window.showInputBox({
      title: `Familiar: New Task (2/${steps})`, prompt: 'What should the agent do? (Enter to use the title)', ignoreFocusOut: true,
    }).then((v) => answered(2, v));
    if (description === undefined) return;
    const types: { label: TaskType; description: string }[] = [
      { label: 'implement', description: 'build something new' },
      { label: 'fix', description: 'fix a bug' },
      { label: 'refactor', description: 'change structure, not behaviour' },
      { label: 'test', description: 'write or repair tests' },
      { label: 'custom', description: 'the default profile' },
    ];
    const type = await vscode.window.showQuickPick(types, { title: `Familiar: New Task (3/${steps}) — type`, ignoreFocusOut: true }).then((v) => answered(3, v));
    if (!type) return;
    const defMode = vscode.workspace.getConfiguration('familiar').get<Mode>('defaultMode', 'executor');
    const modes: { label: Mode; description: string }[] = [
      { label: 'executor', description: 'changes code and runs commands' },
      { label: 'architect', description: 'plans only' },
      { label: 'auditor', description: 'reviews and runs tests, changes nothing' },
    ];
    modes.sort((a, b) => (a.label === defMode ? -1 : b.label === defMode ? 1 : 0));
    const mode = await vscode.window.showQuickPick(modes, { title: `Familiar: New Task (4/${steps}) — mode`, ignoreFocusOut: true }).then((v) => answered(4, v));
    if (!mode) return;
    const criteria = await vscode.window.showInputBox({
      title: `Familiar: New Task (5/${steps})`, prompt: 'Acceptance criteria, separated by ";" (optional)', ignoreFocusOut: true,
    }).then((v) => answered(5, v));
    if (criteria === undefined) return;
    const params: TaskCreateParams = {
      title: title.trim(),
      description: description.trim() || title.trim(),
      type: type.label,
      mode: mode.label,
      acceptanceCriteria: criteria.split(';').map((s) => s.trim()).filter(Boolean),
      hints,
    };
    const t = await client.request<Task>('task/create', params);
    client.tasks.set(t.id, client.tasks.get(t.id) ?? t);
    this.tree.refresh();
    this.updateStatus();
    vscode.window.setStatusBarMessage(`$(check) Familiar: queued "${t.title}"`, 4000);
    void vscode.commands.executeCommand('workbench.view.extension.familiar');
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

  // ---- terminal ----

  private openTerminal(id: string) {
    const existing = this.terminals.get(id);
    if (existing) {
      existing.term.show();
      return;
    }
    const client = this.connected();
    const t = this.task(id);
    const write = new vscode.EventEmitter<string>();
    const close = new vscode.EventEmitter<number | void>();
    const pump = new OutputPump((offset, limit) => client.output(id, offset, limit), (d) => write.fire(d), {
      onError: (err) => this.log.warn(`terminal of ${id}: ${err.message}`),
    });
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      onDidClose: close.event,
      open: (dims) => {
        if (dims) void this.resize(id, dims);
        pump.wake();
      },
      close: () => pump.dispose(),
      handleInput: (data) => {
        client.request('task/input', { id, data }).catch((err) => {
          // Typing into a finished task: say so once in the terminal.
          if (err?.code === Code.FailedPrecondition) write.fire(`\r\n\x1b[2m[familiar: ${err.message}]\x1b[0m\r\n`);
        });
      },
      setDimensions: (dims) => void this.resize(id, dims),
    };
    const term = vscode.window.createTerminal({ name: `Familiar: ${t?.title ?? id}`, pty, iconPath: new vscode.ThemeIcon('hubot') });
    this.terminals.set(id, { term, pump });
    term.show();
  }

  private async resize(id: string, d: vscode.TerminalDimensions) {
    try {
      await this.client?.request('task/resize', { id, cols: d.columns, rows: d.rows });
    } catch (err: any) {
      this.log.debug(`resize ${id}: ${err.message}`);
    }
  }

  // ---- details ----

  private async showTask(id: string) {
    this.lastShown = id;
    const t = this.task(id);
    if (!t) throw new Error('That task is gone.');
    const uri = vscode.Uri.from({ scheme: 'familiar-task', path: `/${id}/${slug(t.title)}.md` });
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
    if (t.status === 'waiting' && t.pendingQuestion) this.prompt(t, t.pendingQuestion);
  }

  // ---- questions ----

  private prompt(t: Task, q: Question) {
    const key = `${t.id}/${q.id}`;
    if (this.prompts.has(key) || this.resolved.has(key)) return;
    const p: Prompt = { taskId: t.id, questionId: q.id, close: () => undefined };
    this.prompts.set(key, p);
    this.shownAt.set(q.id, Date.now());
    trace({ ev: 'prompt', task: t.id, question: q.id, title: t.title, detail: q.kind === 'permission' ? permissionDetail(q) : q.text });
    this.log.info(`question ${q.id} of "${t.title}" (${q.kind}): ${truncate(q.text, 200)}`);
    if (q.kind === 'permission') void this.permission(t, q, p);
    else void this.choiceToast(t, q, p);
  }

  private async permission(t: Task, q: Question, p: Prompt) {
    const detail = permissionDetail(q);
    const what = detail ? `${q.tool ?? 'a tool'}: ${truncate(detail, 160)}` : q.tool ?? truncate(q.text, 160);
    const editable = q.tool === 'Bash' ? 'Edit the command…' : 'Edit the input…';
    // Five choices do not fit a toast (VS Code truncates buttons to "Al…"):
    // the rarer two are one click further, under "More…".
    let pick = await this.toastPrompt(p, `Familiar · "${t.title}" asks to run ${what}`, ['Allow', 'Allow Always', 'Deny', 'More…'],
      () => (q.expiresAt ? `denied automatically in ${roughly(secondsLeft(q.expiresAt, Date.now()) ?? 0)}, at ${localTime(q.expiresAt)}` : ''));
    if (pick === 'More…') {
      const more = await vscode.window.showQuickPick(['Deny with a message…', editable, 'Allow', 'Deny'], {
        title: `"${t.title}" asks to run ${what}`, ignoreFocusOut: true,
      });
      pick = more;
    }
    if (!pick) return; // dismissed: the task stays in "Waiting on you"
    if (this.stale(t, q, p)) return;
    switch (pick) {
      case 'Allow':
        return this.respond(t, q, { optionId: 'allow' });
      case 'Allow Always':
        return this.respond(t, q, { optionId: 'allow_always' });
      case 'Deny':
        return this.respond(t, q, { optionId: 'deny' });
      case 'Deny with a message…': {
        const text = await this.input(p, { title: `Deny "${t.title}" — ${what}`, prompt: 'Tell the agent what to do instead' });
        if (text === undefined) return this.reopen(t, q, p);
        return this.respond(t, q, { optionId: 'deny', text });
      }
      default: {
        const input = q.input ?? {};
        const cmd = typeof input.command === 'string';
        const value = cmd ? input.command : JSON.stringify(input);
        const edited = await this.input(p, { title: `${editable.replace('…', '')} of "${t.title}"`, prompt: cmd ? 'The command to run instead' : 'The tool input (JSON)', value });
        if (edited === undefined) return this.reopen(t, q, p);
        let updatedInput: any;
        try {
          updatedInput = cmd ? { ...input, command: edited } : JSON.parse(edited);
        } catch (err: any) {
          void error(`Familiar: that is not valid JSON: ${err.message}`);
          return this.reopen(t, q, p);
        }
        return this.respond(t, q, { optionId: 'allow', updatedInput });
      }
    }
  }

  private async choiceToast(t: Task, q: Question, p: Prompt) {
    const pick = await this.toastPrompt(p, `Familiar · "${t.title}" asks: ${truncate(q.text, 200)}`, ['Answer…'],
      () => (q.expiresAt ? `${roughly(secondsLeft(q.expiresAt, Date.now()) ?? 0)} left` : ''));
    if (pick && !this.stale(t, q, p)) await this.ask(t, q, p);
  }

  /**
   * Shows a question as a notification whose choices are links, and resolves
   * to the one clicked, or undefined once the question is settled elsewhere.
   * It is a progress notification, not a message with buttons, because only
   * that kind can be closed from code: an answer given in another window, by
   * the policy or by the timeout takes it away here too. It also stays on
   * screen until then (a message with buttons hides itself after a few
   * seconds), and its countdown moves (by the minute: see roughly). It is cancellable because
   * only a notification with a button shows its whole message (the others
   * are cut to one line); Cancel puts the question away unanswered, in
   * "Waiting on you", rather than deny it, which is the safe reading.
   */
  private toastPrompt(p: Prompt, title: string, choices: string[], status: () => string): Promise<string | undefined> {
    const link = (c: string) => `[${c}](command:familiar.answerPrompt?${encodeURIComponent(JSON.stringify([p.taskId, p.questionId, c]))})`;
    const message = () => [choices.map(link).join(' · '), status()].filter(Boolean).join(' — ');
    return new Promise((resolve) => {
      void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: noLinks(title), cancellable: true }, (progress, cancel) =>
        new Promise<void>((closed) => {
          let shown = '';
          const report = () => {
            const m = message();
            if (m !== shown) progress.report({ message: (shown = m) });
          };
          const settle = (choice?: string) => {
            p.tick = p.choose = undefined;
            p.close = () => undefined;
            resolve(choice);
            closed();
          };
          p.tick = report;
          p.choose = settle;
          p.close = () => settle(undefined);
          cancel.onCancellationRequested(() => settle(undefined));
          report();
        }));
    });
  }

  /** A choice clicked in a question's notification (which is up only while choose is set). */
  private answerPrompt(taskId: string, questionId: string, choice: string) {
    this.prompts.get(`${taskId}/${questionId}`)?.choose?.(choice);
  }

  /** The QuickPick / InputBox of a non-permission question. */
  private async ask(t: Task, q: Question, p: Prompt) {
    if (q.kind === 'question' || q.options.length === 0) {
      const text = await this.input(p, { title: `"${t.title}" asks`, prompt: q.text, countdown: q.expiresAt });
      if (text !== undefined) await this.respond(t, q, { text });
      return;
    }
    const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { id?: string }>();
    const multi = isMultiSelect(q);
    qp.canSelectMany = multi;
    qp.placeholder = truncate(q.text, 200);
    qp.ignoreFocusOut = true;
    const other = { label: '$(edit) Something else…', id: undefined, alwaysShow: true };
    qp.items = [...q.options.map((o) => ({ label: o.label, id: o.id })), ...(q.allowText && !multi ? [other] : [])];
    const title = () => `"${t.title}" asks${multi ? ' (pick any)' : ''}` + (q.expiresAt ? ` — ${clock(secondsLeft(q.expiresAt, Date.now()) ?? 0)} left` : '');
    qp.title = title();
    p.tick = () => { qp.title = title(); };
    let done = false;
    p.close = () => { done = true; qp.hide(); };
    const chosen = await new Promise<readonly (vscode.QuickPickItem & { id?: string })[] | undefined>((resolve) => {
      qp.onDidAccept(() => {
        const sel = multi ? qp.selectedItems : qp.activeItems;
        if (sel.length === 0 && multi && q.allowText && qp.value.trim()) {
          resolve([{ label: qp.value, id: undefined }]);
        } else resolve(sel);
        qp.hide();
      });
      qp.onDidHide(() => resolve(undefined));
      qp.show();
    });
    qp.dispose();
    p.tick = undefined;
    if (done || !chosen || chosen.length === 0) return;
    if (chosen.length === 1 && chosen[0].id === undefined) {
      if (chosen[0] !== other) return this.respond(t, q, { text: chosen[0].label });
      const text = await this.input(p, { title: `"${t.title}" asks`, prompt: q.text, countdown: q.expiresAt });
      if (text !== undefined) await this.respond(t, q, { text });
      return;
    }
    await this.respond(t, q, { optionId: chosen.map((c) => c.id).join(',') });
  }

  private input(p: Prompt, o: { title: string; prompt: string; value?: string; countdown?: string }): Promise<string | undefined> {
    const box = vscode.window.createInputBox();
    const title = () => o.title + (o.countdown ? ` — ${clock(secondsLeft(o.countdown, Date.now()) ?? 0)} left` : '');
    box.title = title();
    box.prompt = o.prompt;
    box.value = o.value ?? '';
    box.ignoreFocusOut = true;
    p.tick = () => { box.title = title(); };
    p.close = () => box.hide();
    return new Promise((resolve) => {
      box.onDidAccept(() => { resolve(box.value); box.hide(); });
      box.onDidHide(() => { resolve(undefined); box.dispose(); p.tick = undefined; });
      box.show();
    });
  }

  /** After a dismissed sub-step, the question is still open: offer it again from the view. */
  private reopen(t: Task, q: Question, p: Prompt) {
    this.prompts.delete(`${t.id}/${q.id}`);
    void p;
  }

  /** Whether the question was answered meanwhile (here, elsewhere, by policy or timeout). */
  private stale(t: Task, q: Question, p: Prompt): boolean {
    const key = `${t.id}/${q.id}`;
    const by = this.resolved.get(key);
    const cur = this.task(t.id);
    if (by || (cur && cur.pendingQuestion?.id !== q.id)) {
      void info(`Familiar: "${t.title}" — that question was already answered${by ? ` (${decidedLabel(by)})` : ''}.`);
      this.prompts.delete(key);
      void p;
      return true;
    }
    return false;
  }

  private async respond(t: Task, q: Question, a: { optionId?: string; text?: string; updatedInput?: any }) {
    const key = `${t.id}/${q.id}`;
    try {
      await this.connected().request('task/respond', { id: t.id, questionId: q.id, ...a });
      this.resolved.set(key, 'user');
      this.prompts.delete(key);
    } catch (err: any) {
      if (err?.code === Code.FailedPrecondition || err?.code === Code.NotFound) {
        this.resolved.set(key, 'elsewhere');
        this.prompts.delete(key);
        void info(`Familiar: "${t.title}" — ${err.message}`);
        return;
      }
      this.prompts.delete(key);
      throw err;
    }
  }

  private closePrompt(key: string, decidedBy: string) {
    this.resolved.set(key, decidedBy);
    if (this.resolved.size > 500) this.resolved.delete(this.resolved.keys().next().value!);
    const p = this.prompts.get(key);
    if (!p) return;
    this.prompts.delete(key);
    p.close();
    if (decidedBy === 'timeout') {
      const t = this.task(p.taskId);
      // Short: a notification without buttons shows one line.
      void warn(`Familiar: "${t?.title ?? p.taskId}" got no answer in time: denied.`);
    }
  }

  private async answer(id: string) {
    const t = this.task(id);
    const q = t?.pendingQuestion;
    if (!t || !q) throw new Error('That task is not waiting on you.');
    const key = `${t.id}/${q.id}`;
    this.prompts.get(key)?.close();
    this.prompts.delete(key);
    this.resolved.delete(key);
    const p: Prompt = { taskId: t.id, questionId: q.id, close: () => undefined };
    this.prompts.set(key, p);
    if (q.kind === 'permission') await this.permission(t, q, p);
    else await this.ask(t, q, p);
  }

  // ---- completion, diff, merge, undo ----

  /** A task/completed: every end of a task, announced once (see EndAnnouncer). */
  private async completed(c: TaskCompleted) {
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
    const n = endNotice(t?.title ?? end.id, end, r && { changedFiles: r.changedFiles?.length ?? 0, costUsd: r.costUsd, summary: r.summary });
    trace({ ev: 'end', task: end.id, status: end.status, reason: end.reason, text: n.text, actions: n.actions });
    this.log.info(`task ${end.id} ended: ${end.status}${end.reason ? ` (${end.reason})` : ''}`);
    try {
      const pick = await (n.level === 'warning' ? warn : info)(n.text, ...n.actions);
      switch (pick) {
        case 'Show Changes': return await this.showChanges(end.id, true);
        case 'Merge…': return await this.merge(end.id);
        case 'Continue…': return await this.continueTask(end.id);
        case 'Retry': return await this.act('task/retry', end.id, 'Retrying');
        case 'Open Terminal': return this.openTerminal(end.id);
        case 'Run Doctor': return await this.runDoctor();
      }
    } catch (err: any) {
      this.fail(err);
    }
  }

  async showChanges(id: string, offerMerge = false) {
    const t = this.task(id) ?? (await this.connected().request<Task>('task/get', { id }));
    const diff = await this.diffs.load(id);
    if (diff.files.length === 0) {
      void info(`Familiar: "${t.title}" changed no files.`);
      return;
    }
    const root = this.root!;
    const resources = diff.files.map((f) => {
      const file = vscode.Uri.file(path.join(root, f.path));
      // Same path on both sides (a different path would read as a rename);
      // an added file has no left side, a deleted one no right side.
      const side = (which: string) => vscode.Uri.from({ scheme: 'familiar-diff', path: `/${id}/${f.path}`, query: which });
      return [file, f.status === 'added' ? undefined : side('base'), f.status === 'deleted' ? undefined : side('head')] as [vscode.Uri, vscode.Uri | undefined, vscode.Uri | undefined];
    });
    const title = `Familiar: ${t.title} (${t.worktree?.baseRef ?? 'base'} ↔ ${t.worktree?.branch ?? 'task'})`;
    try {
      await vscode.commands.executeCommand('vscode.changes', title, resources);
    } catch {
      // Older VS Code: one diff editor per file.
      const empty = vscode.Uri.from({ scheme: 'familiar-diff', path: `/${id}/(none)`, query: 'none' });
      for (const [, base, head] of resources) await vscode.commands.executeCommand('vscode.diff', base ?? empty, head ?? empty, title, { preview: false });
    }
    if (offerMerge && t.status === 'merging') {
      const pick = await info(`Familiar · "${t.title}": ${plural(diff.files.length, 'file')} changed.`, 'Merge…');
      if (pick) await this.merge(id);
    }
  }

  async merge(id: string) {
    const t = this.task(id);
    if (!t) throw new Error('That task is gone.');
    const items: (vscode.QuickPickItem & { strategy: MergeStrategy })[] = [
      { label: 'Merge', description: 'a merge commit', detail: `Keeps the task's commits; ${t.worktree?.baseRef ?? 'the base branch'} gets a merge commit.`, strategy: 'merge' },
      { label: 'Squash', description: 'one commit', detail: 'All of the task\'s changes as one commit.', strategy: 'squash' },
      { label: 'Rebase', description: 'linear history', detail: 'The task\'s commits replayed on top of the base branch.', strategy: 'rebase' },
    ];
    const pick = await vscode.window.showQuickPick(items, { title: `Familiar: merge "${t.title}" into ${t.worktree?.baseRef ?? 'the base branch'}`, ignoreFocusOut: true });
    if (!pick) return;
    let merged: Task;
    try {
      merged = await this.connected().request<Task>('task/merge', { id, strategy: pick.strategy });
    } catch (err: any) {
      if (err?.code === Code.Conflict) {
        const files: string[] = err.data?.files ?? [];
        void error(`Familiar: "${t.title}" conflicts with ${t.worktree?.baseRef ?? 'the base branch'} in ${files.join(', ') || 'some files'}. Nothing was changed.`, 'Continue…').then((p) => p && this.continueTask(id));
        return;
      }
      throw err;
    }
    this.client?.tasks.set(id, merged);
    this.tree.refresh();
    const u = await info(
      `Familiar: merged "${t.title}" into ${merged.worktree?.baseRef ?? 'the base branch'} (${pick.strategy}). Undo is possible for ${duration(this.undoWindowSec)}.`, 'Undo');
    if (u === 'Undo') await this.undo(id);
  }

  async undo(id: string) {
    const t = await this.connected().request<Task>('task/undo', { id });
    this.client?.tasks.set(id, t);
    this.tree.refresh();
    // Short: a notification without buttons shows one line; where the work is kept goes to the log.
    this.log.info(`undid "${t.title}"; the undone work stays under refs/familiar/undo/${id}`);
    void info(`Familiar: undid "${t.title}"; its work is kept.`);
  }

  private async act(method: string, id: string, done: string) {
    const t = await this.connected().request<Task>(method, { id });
    this.client?.tasks.set(t.id, t);
    this.tree.refresh();
    vscode.window.setStatusBarMessage(`$(check) Familiar: ${done} "${t.title}"`, 3000);
  }

  private async cancel(id: string) {
    const t = this.task(id);
    const pick = await warn(`Cancel "${t?.title ?? id}"? The agent is stopped; its worktree is kept.`, { modal: true }, 'Cancel Task');
    if (pick) await this.act('task/cancel', id, 'Cancelled');
  }

  private async continueTask(id: string) {
    const t = this.task(id);
    const text = await vscode.window.showInputBox({ title: `Continue "${t?.title ?? id}"`, prompt: 'A follow-up message to the agent', ignoreFocusOut: true });
    if (!text) return;
    await this.connected().request<Task>('task/send', { id, text });
  }

  private async remove(id: string) {
    const t = this.task(id);
    const pick = await warn(`Remove "${t?.title ?? id}"? Its worktree is deleted.`, { modal: true }, 'Remove', 'Remove with Branch');
    if (!pick) return;
    const params = { id, deleteBranch: pick === 'Remove with Branch' };
    try {
      await this.connected().request('task/remove', params);
    } catch (err: any) {
      if (err?.code !== Code.FailedPrecondition) throw err;
      const force = await warn(`Familiar: ${err.message}`, { modal: true }, 'Remove Anyway');
      if (!force) return;
      await this.connected().request('task/remove', { ...params, force: true });
    }
    this.client?.tasks.delete(id);
    this.ends.forget(id);
    this.tree.refresh();
    this.updateStatus();
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
  private async whenConnected(timeoutMs = 60000): Promise<FamiliarClient> {
    const c = this.client;
    if (!c || c.state === 'stopped') return this.connected();
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

  private fail(err: any) {
    const msg = err?.message ?? String(err);
    this.log.error(msg);
    void error(`Familiar: ${msg}`);
  }
}

interface Prompt {
  taskId: string;
  questionId: string;
  close: () => void;
  tick?: () => void;
  /** Set while the question's notification is up: a choice clicked in it. */
  choose?: (choice: string) => void;
}

class TaskTree implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<Node | Node[] | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private pending?: NodeJS.Timeout;
  private last = 0;
  private full = false;
  private readonly dirty = new Set<string>();
  /** Stable element objects: VS Code refreshes single elements by identity. */
  private readonly nodes = new Map<string, Node>();
  /** Where each task was last drawn (group and queue slot): moving it needs a full redraw. */
  private readonly drawn = new Map<string, string>();
  /** What each task's row showed when last drawn: a tick that changes none redraws nothing. */
  private readonly shown = new Map<string, string>();

  constructor(private readonly f: Familiar) {}

  /** Redraws everything (soon, coalesced). */
  refresh() {
    this.full = true;
    this.schedule();
  }

  /** Notes a changed task (the next redraw, coalesced, shows it). */
  taskChanged(id: string) {
    const t = this.f.task(id);
    if (!t || this.drawn.get(id) !== place(t)) this.full = true;
    else this.dirty.add(id);
    this.schedule();
  }

  /** Redraws the rows whose elapsed time or countdown moves. */
  tick() {
    for (const id of this.drawn.keys()) {
      const t = this.f.task(id);
      if (t && ['running', 'starting', 'waiting', 'queued'].includes(t.status)) this.dirty.add(id);
    }
    if (this.dirty.size) this.schedule();
  }

  /**
   * Coalesces bursts (30 agents change activity several times a second) into
   * at most four redraws a second.
   */
  private schedule() {
    if (this.pending) return;
    const wait = Math.max(30, this.last + 250 - Date.now());
    this.pending = setTimeout(() => {
      this.pending = undefined;
      const now = Date.now();
      // Only when a row would look different: a redraw costs the renderer,
      // and 30 running tasks are dirty every second for their elapsed time.
      const visible = this.full || [...this.dirty].some((id) => {
        const t = this.f.task(id);
        return !t || this.shown.get(id) !== rowKey(t, now);
      });
      this.full = false;
      this.dirty.clear();
      if (!visible) return;
      this.last = now;
      // Always the whole tree: refreshing single rows every second (elapsed
      // times) made VS Code drop clicks on those rows in the UI test.
      this.changed.fire(undefined);
    }, wait);
  }

  private node(kind: 'group' | 'task', id: string): Node {
    const key = `${kind}:${id}`;
    let n = this.nodes.get(key);
    if (!n) {
      n = kind === 'group' ? { kind, id: id as GroupId } : { kind, id };
      this.nodes.set(key, n);
    }
    return n;
  }

  getChildren(n?: Node): Node[] {
    const tasks = this.f.client?.tasks.values() ?? [];
    if (!n) {
      const all = [...tasks];
      for (const id of [...this.drawn.keys()]) if (!this.f.task(id)) { this.drawn.delete(id); this.shown.delete(id); this.nodes.delete(`task:${id}`); }
      return groups.filter((g) => all.some((t) => groupOfTask(t) === g.id)).map((g) => this.node('group', g.id));
    }
    if (n.kind === 'group') return tasksIn(n.id, tasks).map((t) => this.node('task', t.id));
    return [];
  }

  getTreeItem(n: Node): vscode.TreeItem {
    const now = Date.now();
    if (n.kind === 'group') {
      const g = groups.find((x) => x.id === n.id)!;
      const count = tasksIn(n.id, this.f.client?.tasks.values() ?? []).length;
      const item = new vscode.TreeItem(`${g.label} (${count})`, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${n.id}`;
      item.contextValue = 'group';
      return item;
    }
    const t = this.f.task(n.id);
    if (!t) return new vscode.TreeItem('(gone)');
    this.drawn.set(t.id, place(t));
    this.shown.set(t.id, rowKey(t, now));
    const item = new vscode.TreeItem(t.title, vscode.TreeItemCollapsibleState.None);
    item.id = `task:${t.id}`;
    item.description = describe(t, now, true);
    item.iconPath = icon(t);
    // A task that changed nothing offers neither Merge nor its changes, whatever its status.
    const none = !!t.result?.noChanges && (t.status === 'merging' || t.status === 'merged');
    const flags = ['task', none ? 'nochanges' : t.status];
    if (!none && t.worktree && ['merging', 'merged', 'blocked', 'cancelled', 'running', 'waiting', 'paused'].includes(t.status)) flags.push('changes');
    if (!none && undoable(t, now)) flags.push('undoable');
    item.contextValue = flags.join(' ');
    item.command = { command: 'familiar.showTask', title: 'Show Details', arguments: [t.id] };
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**${escapeMd(t.title)}** — ${t.status}\n\n`);
    md.appendText(truncate(t.description, 300) + '\n\n');
    md.appendMarkdown(`${t.type} · ${t.mode} · attempt ${t.attempt}${t.worktree ? ` · \`${t.worktree.branch}\`` : ''}`);
    if (t.result?.summary) md.appendMarkdown('\n\n').appendText(truncate(t.result.summary, 500));
    item.tooltip = md;
    item.accessibilityInformation = { label: `${t.title}, ${t.status}, ${item.description}` };
    return item;
  }

  getParent(n: Node): Node | undefined {
    if (n.kind === 'group') return undefined;
    const t = this.f.task(n.id);
    return t ? this.node('group', groupOfTask(t)) : undefined;
  }
}

/** Everything a task's row shows (besides its place), to tell whether a redraw would change it. */
function rowKey(t: Task, now: number): string {
  return [t.title, t.status, t.activity, describe(t, now, true), undoable(t, now), t.worktree?.branch ?? '', t.type, t.mode, t.attempt,
    truncate(t.description, 300), t.result?.summary ?? ''].join('\u0000');
}

function place(t: Task): string {
  return `${groupOfTask(t)}/${t.status === 'queued' ? t.queuePosition ?? '' : ''}`;
}

function icon(t: Task): vscode.ThemeIcon {
  const c = (id: string) => new vscode.ThemeColor(id);
  switch (t.status) {
    case 'waiting': return new vscode.ThemeIcon('bell-dot', c('notificationsWarningIcon.foreground'));
    // No spinning icons: each one costs the renderer a style recalculation
    // and a repaint 20 times a second, and with 30 running tasks that was
    // most of its main thread (UI load test), delaying every click.
    case 'starting': return new vscode.ThemeIcon('rocket');
    case 'running':
      return new vscode.ThemeIcon(t.activity === 'running_command' ? 'terminal' : t.activity === 'writing' ? 'edit' : 'pulse', c('charts.blue'));
    case 'paused': return new vscode.ThemeIcon('debug-pause');
    case 'queued': return new vscode.ThemeIcon('clock');
    case 'merging': return t.result?.noChanges ? new vscode.ThemeIcon('check') : new vscode.ThemeIcon('git-pull-request', c('charts.green'));
    case 'merged': return new vscode.ThemeIcon('check', c('charts.green'));
    case 'blocked': return new vscode.ThemeIcon('error', c('errorForeground'));
    case 'cancelled': return new vscode.ThemeIcon('circle-slash');
  }
}

/** The read-only details document a tree click opens. */
class DetailsProvider implements vscode.TextDocumentContentProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly open = new Map<string, vscode.Uri>();

  constructor(private readonly f: Familiar) {}

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
      `# ${t.title}`,
      '',
      `Status:   ${t.status}${t.status === 'running' && activityText(t.activity) ? ` (${activityText(t.activity)})` : ''}`,
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
    if (t.blocked) lines.push('', '## Blocked', '', `${blockedLabel(t.blocked.reason)}: ${t.blocked.detail}`);
    if (t.result?.noChanges) lines.push('', 'Done, no changes: there is nothing to merge.');
    if (t.result) {
      lines.push('', '## Result', '', t.result.summary);
      if (t.result.costUsd !== undefined) lines.push('', `Cost: $${t.result.costUsd.toFixed(4)}`);
      if (t.result.changedFiles.length) lines.push('', '## Changed files', '', ...t.result.changedFiles.map((c) => `- ${c.status} ${c.path}${c.oldPath ? ` (from ${c.oldPath})` : ''}`));
      if (t.result.commits.length) lines.push('', '## Commits', '', ...t.result.commits.map((c) => `- ${c.sha.slice(0, 10)} ${c.subject}`));
    }
    return lines.join('\n') + '\n';
  }
}

/**
 * Serves both sides of a task's diff: familiar-diff:/<id>/<path>?base is the
 * file at the task's base commit, ?head is that plus the hunks task/diff
 * reports for it.
 */
class DiffProvider implements vscode.TextDocumentContentProvider {
  private readonly cache = new Map<string, { at: number; diff: Promise<DiffResult> }>();

  constructor(private readonly f: Familiar) {}

  load(id: string): Promise<DiffResult> {
    const c = this.cache.get(id);
    if (c && Date.now() - c.at < 5000) return c.diff;
    const diff = this.f.connected().request<DiffResult>('task/diff', { id });
    this.cache.set(id, { at: Date.now(), diff });
    diff.catch(() => this.cache.delete(id));
    return diff;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const [, id, ...rest] = uri.path.split('/');
    const file = rest.join('/');
    const side = uri.query;
    if (side === 'none') return '';
    const t = this.f.task(id) ?? (await this.f.connected().request<Task>('task/get', { id }));
    const diff = await this.load(id);
    const entry = diff.files.find((f) => f.path === file);
    const changed = t.result?.changedFiles.find((c) => c.path === file);
    const basePath = changed?.oldPath ?? file;
    const status = entry?.status ?? changed?.status;
    const base = status === 'added' ? '' : await gitShow(this.f.root!, `${t.worktree!.baseCommit}:${basePath}`).catch(() => '');
    if (side === 'base') return base;
    if (status === 'deleted') return '';
    const applied = applyPatch(base, filePatch(diff.patch, file));
    if (applied !== undefined) return applied;
    // The patch did not apply (binary, or cut): read the task branch instead.
    return gitShow(this.f.root!, `${t.worktree!.branch}:${file}`).catch(() => '');
  }
}

function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

async function gitTop(dir: string): Promise<string | undefined> {
  try {
    return (await run('git', ['rev-parse', '--show-toplevel'], dir)).trim() || undefined;
  } catch {
    return undefined;
  }
}

function gitShow(root: string, spec: string): Promise<string> {
  return run('git', ['show', spec], root);
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'task';
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|]/g, '\\$&');
}

function localTime(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleTimeString();
}

function decidedLabel(by: string): string {
  return ({ user: 'in another window', policy: 'by the policy', timeout: 'it timed out', agent: 'by the agent', elsewhere: 'elsewhere' } as Record<string, string>)[by] ?? by;
}

// Notifications whose text cannot turn into links (see noLinks): every
// message of the extension goes through these.
function info(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showInformationMessage(noLinks(message), ...rest);
}

function warn(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showWarningMessage(noLinks(message), ...rest);
}

function error(message: string, ...rest: any[]): Thenable<any> {
  return vscode.window.showErrorMessage(noLinks(message), ...rest);
}
