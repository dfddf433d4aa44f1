// The Familiar extension's activation and wiring: Familiar makes the
// modules (each given this as their Host, host.ts), registers the commands
// (commands.ts) and wires familiar's notifications to the modules. The
// connection is connection.ts, the window's start startup.ts, the settings
// settings.ts, the status bar statusbar.ts, the ends announce.ts, the task
// actions actions.ts; all protocol work is in FamiliarClient (client.ts).

import * as vscode from 'vscode';
import { FamiliarClient } from './client';
import { EndAnnouncer } from './model';
import type { Task } from './protocol';
import type { Host } from './host';
import { TaskTree, Node } from './tree';
import { DetailsProvider } from './details';
import { Changes, TextProvider } from './changes';
import { Terminals } from './terminals';
import { Questions } from './questions';
import { TaskViews } from './taskview';
import { Mentions } from './mentions';
import { StatusBar } from './statusbar';
import { Announcements } from './announce';
import { TaskActions } from './actions';
import { SettingsSync } from './settings';
import { Startup } from './startup';
import { Connection } from './connection';
import { registerCommands } from './commands';
import { NewTaskForm } from './newtask';
import { History } from './history';
import { autonomyWarning } from './grants';
import { MergeQueue } from './mergequeue';
import { Plans } from './plans';
import { skillsChanged } from './skills';
import { serverMessage } from './controls';
import { error, gitTop, trace, traceHost, warn } from './ui';

let ext: Familiar | undefined;

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

export class Familiar implements Host, vscode.Disposable {
  private readonly conn: Connection;
  /** The connection to familiar, once made. */
  get client(): FamiliarClient | undefined {
    return this.conn.client;
  }
  root?: string;
  readonly log: vscode.LogOutputChannel;
  private readonly startup: Startup;
  private readonly settings = new SettingsSync(this, {
    pathChanged: async () => {
      if ((await this.startup.findBinary()) && this.client) {
        // Leave without shutdown: agents of a shared familiar keep running.
        await this.client.detach();
        this.conn.client = undefined;
        await this.connect();
      }
    },
    undoWindow: (sec) => { this.undoWindowSec = sec; },
  });
  private watching = false;
  private readonly disposables: vscode.Disposable[] = [];
  readonly tree: TaskTree = new TaskTree(this, () => this.queue, () => this.plans);
  private view!: vscode.TreeView<Node>;
  private readonly status: StatusBar;
  readonly terminals: Terminals = new Terminals(this, (id) => this.taskViews.feed(id));
  readonly questions: Questions = new Questions(this);
  readonly changes = new Changes(this);
  readonly texts = new TextProvider();
  readonly mentions = new Mentions();
  readonly ends = new EndAnnouncer();
  readonly history = new History(this);
  readonly queue = new MergeQueue(this);
  readonly plans: Plans;
  private readonly details = new DetailsProvider(this);
  private readonly announcements = new Announcements(this, this.ends, {
    showChanges: (id) => this.changes.showChanges(id, true),
    merge: (id) => this.changes.merge(id),
    retry: (id) => this.actions.act('task/retry', id, 'Retrying'),
    openTerminal: (id) => this.terminals.openTerminal(id),
    runDoctor: () => this.startup.runDoctor(),
    queueTakes: (id) => this.queue.takes(id),
    planTakes: (id) => this.plans.owns(id),
    activeTask: () => this.taskViews.activeTask(),
  });
  readonly taskViews: TaskViews;
  private readonly newTaskForm: NewTaskForm;
  private readonly actions: TaskActions;
  undoWindowSec = 300;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.taskViews = new TaskViews(this, context.extensionUri);
    this.plans = new Plans(this, context.extensionUri);
    this.newTaskForm = new NewTaskForm(this, context.workspaceState, context.extensionUri);
    this.actions = new TaskActions(this, { newTaskForm: this.newTaskForm, taskViews: this.taskViews, questions: this.questions, history: this.history });
    this.disposables.push(this.terminals, this.taskViews, this.queue, this.plans, this.tree, this.mentions);
    this.log = vscode.window.createOutputChannel('Familiar', { log: true });
    this.conn = new Connection(this.log, context.workspaceState);
    this.status = new StatusBar(this, {
      tick: () => this.tree.tick(),
      prompts: this.questions.prompts,
      detailsChanged: (id) => this.details.changed(id),
    });
    this.startup = new Startup(this, {
      status: this.status,
      extensionPath: context.extensionPath,
      setRoot: (root) => { this.root = root; },
      connect: () => this.connect(),
    });
    this.disposables.push(this.log, this.status, this.startup);
  }

  api() {
    return { client: () => this.client, shownAt: this.questions.shownAt };
  }

  dispose() {
    this.settings.dispose();
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
      vscode.workspace.onDidChangeConfiguration((e) => this.settings.changed(e)),
    );
    registerCommands(this, reg, {
      view: this.view, actions: this.actions, changes: this.changes, terminals: this.terminals, questions: this.questions,
      taskViews: this.taskViews, history: this.history, queue: this.queue, plans: this.plans, tree: this.tree, startup: this.startup,
      reconnect: () => this.reconnect(),
    });
    this.status.view = this.view;
    this.updateStatus();
    this.status.startTicking();

    if (process.platform === 'win32') {
      void this.startup.offerWSL();
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== 'file') {
      this.status.say('$(hubot) Familiar: open a folder');
      return;
    }
    if (!(await this.startup.findBinary())) return;
    const top = await gitTop(folder.uri.fsPath);
    if (!top) {
      void this.startup.offerGitInit(folder.uri.fsPath);
      return;
    }
    this.root = top;
    await this.connect();
  }

  private async connect() {
    if (!this.watching) {
      this.watching = true;
      this.settings.watchPolicyFile();
    }
    await this.conn.open(this.startup.familiarPath!, this.root!, () => this.settings.current(), {
      state: () => this.updateStatus(),
      wire: (client) => this.wire(client),
      started: (init) => this.startup.checkClaude(init.claude),
      runDoctor: () => this.startup.runDoctor(),
    });
  }

  /** What each of familiar's notifications sets off in the modules. */
  private wire(client: FamiliarClient) {
    client.onTasks(() => {
      // (Re)connected: output notifications may have been missed meanwhile.
      this.terminals.wakeAll();
      this.queue.loaded();
      this.plans.loaded();
      this.tree.refresh();
      this.updateStatus();
      // Ends replayed from what was missed, announced if the task is still so
      // (not a block it has been continued past meanwhile).
      this.announcements.loaded();
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
      this.status.soon();
      // An older familiar announces a block only with task/updated.
      this.announcements.updated(t);
    });
    client.onOutput((o) => this.terminals.wake(o.id));
    client.onQuestion(([q]) => {
      trace({ ev: 'question', task: q.id, question: q.question.id });
      const t = client.tasks.get(q.id);
      if (t) this.questions.prompt(t, q.question);
      else void client.request('task/get', { id: q.id }).then((t) => this.questions.prompt(t, q.question));
    });
    client.onQuestionResolved(([r]) => this.questions.closePrompt(`${r.id}/${r.questionId}`, r.decidedBy));
    client.onCompleted(([c]) => void this.announcements.completed(c));
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
  }

  private async reconnect() {
    if (!this.client) return this.start();
    await this.client.restart();
  }

  updateStatus() {
    this.status.update();
  }

  continueTask(id: string) {
    return this.actions.continueTask(id);
  }

  text(id: string, ref: string) {
    return this.actions.text(id, ref);
  }

  connected(): FamiliarClient {
    return this.conn.connected();
  }

  whenConnected(timeoutMs?: number): Promise<FamiliarClient> {
    return this.conn.whenConnected(timeoutMs);
  }

  fail(err: any) {
    const msg = err?.message ?? String(err);
    this.log.error(msg);
    void error(`Familiar: ${msg}`);
  }
}
