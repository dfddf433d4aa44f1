// Questions of agents: permissions, choices and prose questions, shown as
// notifications that close when the question is settled anywhere.

import * as vscode from 'vscode';
import type { Host } from './host';
import * as fs from 'fs';
import * as os from 'os';
import {
  AlwaysChoice, alwaysChoices, clock, editTools, grantScopes, isMultiSelect, linkText, mcpTool, noLinks, permissionDetail, permissionWhat,
  noAbsolutePaths, plainText, proposedText, relPath, roughly, secondsLeft, taskLabel, truncate,
} from './model';
import type { GrantScope, Question, Task } from './protocol';
import { Code } from './protocol';
import { alwaysCovers } from './transcript';
import { suggestedAnswers } from './options';
import { decidedLabel, error, info, localTime, trace, warn } from './ui';

/** The choice that allows an edit and lets the task's later edits through unasked (claude's accept-edits mode). */
const acceptEditsLabel = 'Allow and accept edits for this task';

/** A notification's choice: its words, or words and the value a click returns. */
type Choice = string | { label: string; value: string };

export interface Prompt {
  taskId: string;
  questionId: string;
  close: () => void;
  tick?: () => void;
  /** Set while the question's notification is up: a choice clicked in it. */
  choose?: (choice: string) => void;
}

export class Questions {
  readonly prompts = new Map<string, Prompt>(); // key task/question
  private readonly resolved = new Map<string, string>(); // key → decidedBy
  /** Timestamps the UI tests read: question id → when its prompt was shown. */
  readonly shownAt = new Map<string, number>();

  constructor(private readonly f: Host) {}


  /** When the person last stopped a task's turn from its view, by task. */
  private readonly stops = new Map<string, number>();

  /** The person stopped a task's turn: the agent's "what should Claude do instead?" that follows is not news. */
  stopped(taskId: string) {
    this.stops.set(taskId, Date.now());
  }

  prompt(t: Task, q: Question) {
    const key = `${t.id}/${q.id}`;
    if (this.prompts.has(key) || this.resolved.has(key)) return;
    // The question a Stop brings under the PTY driver, asked of the person
    // who just pressed Stop: it waits on the task view's card (and the
    // message box answers it), no notification.
    const stoppedAt = this.stops.get(t.id);
    if (stoppedAt !== undefined && Date.now() - stoppedAt < 60000 && q.kind === 'question' && /^Interrupted\b/.test(q.text)) {
      this.stops.delete(t.id);
      this.f.log.info(`question ${q.id} of "${t.title}" after a Stop: shown in its view only`);
      return;
    }
    const p: Prompt = { taskId: t.id, questionId: q.id, close: () => undefined };
    this.prompts.set(key, p);
    this.shownAt.set(q.id, Date.now());
    trace({ ev: 'prompt', task: t.id, question: q.id, title: t.title, detail: q.kind === 'permission' ? permissionDetail(q, t.worktree?.path) : q.text });
    this.f.log.info(`question ${q.id} of "${t.title}" (${q.kind}): ${truncate(q.text, 200)}`);
    if (q.kind === 'permission') void this.permission(t, q, p);
    else void this.choiceToast(t, q, p);
  }

  async permission(t: Task, q: Question, p: Prompt): Promise<void> {
    const what = permissionWhat(q, t.worktree?.path);
    const editable = q.tool === 'Bash' ? 'Edit the command…' : 'Edit the input…';
    const edit = editTools.includes(q.tool ?? '');
    const detail = permissionDetail(q, t.worktree?.path);
    // Review… where the notification cannot show it all: an edit's change, a
    // long command, an MCP tool's input, anything clipped.
    const reviewable = edit || !!mcpTool(q.tool) || detail.length > 160 || !!q.truncated || (!detail && q.input !== undefined);
    // Allow Always… only where a rule can cover the call: familiar's "no rule can cover" option remembers nothing.
    const always = alwaysCovers(q) ? alwaysChoices(q) : [];
    const acceptEdits = q.options.some((o) => o.id === 'mode_accept_edits');
    // Rarer choices are one click further, under "More…": a notification's
    // line holds about five.
    const choices = [...(reviewable ? ['Review…'] : []), 'Allow', ...(always.length ? ['Allow Always…'] : []), 'Deny', 'More…'];
    const title = `Familiar · "${taskLabel(t)}" asks to ${what}`;
    const status = () => (q.expiresAt ? `denied automatically in ${roughly(secondsLeft(q.expiresAt, Date.now()) ?? 0)}, at ${localTime(q.expiresAt)}` : '');
    let pick = await this.toastPrompt(p, title, choices, status);
    // Allow and Deny stay in reach after a review: the notification comes back.
    while (pick === 'Review…') {
      if (this.stale(t, q, p)) return;
      await this.review(t, q).catch((err) => this.f.fail(err));
      pick = await this.toastPrompt(p, title, choices.filter((c) => c !== 'Review…'), status);
    }
    if (pick === 'More…') {
      pick = await vscode.window.showQuickPick([...(reviewable ? [] : ['Review…']), ...(acceptEdits ? [acceptEditsLabel] : []), 'Deny with a message…', editable, 'Allow', 'Deny'], {
        title: `"${taskLabel(t)}" asks to ${what}`, ignoreFocusOut: true,
      });
      if (pick === 'Review…') {
        await this.review(t, q);
        return this.permission(t, q, p);
      }
    }
    if (!pick) return; // dismissed: the task stays in "Waiting on you"
    if (this.stale(t, q, p)) return;
    switch (pick) {
      case 'Allow':
        return this.respond(t, q, { optionId: 'allow' });
      case acceptEditsLabel:
        return this.respond(t, q, { optionId: 'mode_accept_edits' });
      case 'Allow Always…': {
        const grant = await this.pickGrant(t, q, always);
        if (!grant) return this.reopen(t, q, p);
        if (this.stale(t, q, p)) return;
        return this.respond(t, q, { optionId: grant.id, grantScope: grant.scope });
      }
      case 'Deny':
        return this.respond(t, q, { optionId: 'deny' });
      case 'Deny with a message…': {
        const text = await this.input(p, { title: `Deny "${taskLabel(t)}" — ${what}`, prompt: 'Tell the agent what to do instead' });
        if (text === undefined) return this.reopen(t, q, p);
        return this.respond(t, q, { optionId: 'deny', text });
      }
      default: {
        const input = await this.wholeInput(t, q);
        const cmd = typeof input.command === 'string';
        const value = cmd ? input.command : JSON.stringify(input);
        const edited = await this.input(p, { title: `${editable.replace('…', '')} of "${taskLabel(t)}"`, prompt: cmd ? 'The command to run instead' : 'The tool input (JSON)', value });
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

  /**
   * Which allow-always rule, and where it holds: each choice names its rule
   * before the click (familiar's broadest safe rule, and the exact one where
   * it offers it), then the scope (this task, this repository, me).
   */
  private async pickGrant(t: Task, q: Question, always: AlwaysChoice[]): Promise<{ id: string; scope: GrantScope } | undefined> {
    let choice: AlwaysChoice | undefined = always[0];
    if (always.length > 1 || always[0]?.rule) {
      const items = always.map((a) => ({ label: a.label, detail: a.detail, a }));
      choice = (await vscode.window.showQuickPick(items, { title: `"${taskLabel(t)}": allow always — which rule?`, ignoreFocusOut: true }))?.a;
    }
    if (!choice) return undefined;
    const scope = await vscode.window.showQuickPick(grantScopes.map((g) => ({ label: g.label, detail: g.detail, scope: g.scope })), {
      title: `${choice.rule ?? 'Allow always'} — for whom?`, ignoreFocusOut: true,
    });
    return scope && { id: choice.id, scope: scope.scope };
  }

  /** The tool input whole: fetched with task/text when the question carries it clipped. */
  private async wholeInput(t: Task, q: Question): Promise<any> {
    if (!q.truncated || !q.inputRef) return q.input ?? {};
    const text = await this.f.text(t.id, q.inputRef);
    try {
      return JSON.parse(text);
    } catch {
      return q.input ?? {};
    }
  }

  /**
   * Review…: an edit opens VS Code's diff editor, the file as it is against
   * the file as the agent proposes it (a new file against an empty one); a
   * command or another tool's input opens whole in a read-only editor.
   */
  async review(t: Task, q: Question) {
    const input = await this.wholeInput(t, q);
    const file: string | undefined = typeof input.file_path === 'string' ? input.file_path : typeof input.notebook_path === 'string' ? input.notebook_path : undefined;
    const rel = file ? relPath(file, t.worktree?.path) : '';
    if (file && editTools.includes(q.tool ?? '') && q.tool !== 'NotebookEdit') {
      const current = await fs.promises.readFile(file, 'utf8').catch(() => '');
      const proposed = proposedText(q.tool, input, current);
      if (proposed !== undefined) {
        // The tab's title: no absolute path, wherever the file is.
        const title = noAbsolutePaths(`${rel}: as it is ↔ as "${taskLabel(t)}" proposes`, { worktree: t.worktree?.path, repo: this.f.root, home: os.homedir() });
        await this.f.texts.diff(current, proposed, rel, title);
        return;
      }
    }
    const mcp = mcpTool(q.tool);
    let doc: string;
    let name: string;
    if (typeof input.command === 'string') {
      doc = input.command + (typeof input.description === 'string' ? `\n\n# ${input.description}\n` : '\n');
      name = 'command.sh';
    } else {
      const head = mcp ? `MCP server: ${mcp.server}\nTool: ${mcp.tool}\n` : `Tool: ${q.tool ?? '?'}\n`;
      doc = `${head}${rel ? `File: ${rel}\n` : ''}\nInput:\n${JSON.stringify(input, null, 2)}\n`;
      name = 'input.yaml';
    }
    const ed = await vscode.window.showTextDocument(this.f.texts.put(doc, name), { preview: true });
    void ed;
  }

  async choiceToast(t: Task, q: Question, p: Prompt) {
    // A prose question's suggested answers are choices right in the
    // notification (a click sends their words); a free answer is one further;
    // a question read from the agent's last message may only be a report:
    // Mark done finishes the task.
    const direct = q.kind === 'question' ? q.options.filter((o) => o.label.length <= 60).slice(0, 3) : [];
    // Options written inline ("1. Postgres 2. SQLite") are one click too, answered with their words.
    const read = q.kind === 'question' && !q.options.length ? suggestedAnswers(q.text).filter((l) => l.length <= 60).slice(0, 3) : [];
    const choices: Choice[] = [
      ...direct.map((o) => ({ label: o.label, value: `option:${o.id}` })),
      ...read.map((l) => ({ label: l, value: `words:${l}` })),
      q.kind === 'question' && q.options.length ? 'Other answer…' : 'Answer…',
      ...(q.closing ? ['Mark done'] : []),
    ];
    // A question cut at 30 KB says so, and Read all… opens it whole (task/text).
    const clipped = q.truncated && !!q.textRef;
    const text = q.truncated ? `${truncate(plainText(q.text), 200)} [clipped]` : truncate(plainText(q.text), 200);
    if (clipped) choices.unshift('Read all…');
    const status = () => (q.expiresAt ? `${roughly(secondsLeft(q.expiresAt, Date.now()) ?? 0)} left` : '');
    let pick = await this.toastPrompt(p, `Familiar · "${taskLabel(t)}" asks: ${text}`, choices, status);
    while (pick === 'Read all…') {
      if (this.stale(t, q, p)) return;
      try {
        const whole = await this.f.text(t.id, q.textRef!);
        await vscode.window.showTextDocument(this.f.texts.put(whole, 'question.md'), { preview: true });
      } catch (err: any) {
        this.f.fail(err);
      }
      pick = await this.toastPrompt(p, `Familiar · "${taskLabel(t)}" asks: ${text}`, choices.filter((c) => c !== 'Read all…'), status);
    }
    if (!pick || this.stale(t, q, p)) return;
    if (pick.startsWith('option:')) return this.respond(t, q, { optionId: pick.slice('option:'.length) });
    if (pick.startsWith('words:')) return this.respond(t, q, { text: pick.slice('words:'.length) });
    if (pick === 'Mark done') return this.markDone(t, q);
    await this.ask(t, q, p);
  }

  async markDone(t: Task, q: Question) {
    const key = `${t.id}/${q.id}`;
    try {
      const done = await this.f.connected().request('task/markDone', { id: t.id, questionId: q.id });
      this.resolved.set(key, 'user');
      this.prompts.delete(key);
      this.f.client?.tasks.set(done.id, done);
      this.f.tree.refresh();
    } catch (err: any) {
      this.prompts.delete(key);
      if (err?.code === Code.FailedPrecondition || err?.code === Code.NotFound) {
        void info(`Familiar: "${taskLabel(t)}" — ${err.message}`);
        return;
      }
      throw err;
    }
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
   * "Waiting on you", rather than deny it, which is the safe reading. The
   * button's word cannot be changed, so the message says what it does.
   */
  toastPrompt(p: Prompt, title: string, choices: Choice[], status: () => string): Promise<string | undefined> {
    const link = (c: Choice) => {
      const { label, value } = typeof c === 'string' ? { label: c, value: c } : c;
      return `[${linkText(label)}](command:familiar.answerPrompt?${encodeURIComponent(JSON.stringify([p.taskId, p.questionId, value]))})`;
    };
    const message = () => [choices.map(link).join(' · '), status(), '(Cancel: answer later)'].filter(Boolean).join(' — ');
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
  answerPrompt(taskId: string, questionId: string, choice: string) {
    this.prompts.get(`${taskId}/${questionId}`)?.choose?.(choice);
  }

  /** The QuickPick / InputBox of a non-permission question. */
  async ask(t: Task, q: Question, p: Prompt) {
    if (q.options.length === 0) {
      const text = await this.input(p, { title: `"${t.title}" asks`, prompt: plainText(q.text), countdown: q.expiresAt });
      if (text !== undefined) await this.respond(t, q, { text });
      return;
    }
    const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { id?: string }>();
    const multi = isMultiSelect(q);
    qp.canSelectMany = multi;
    qp.placeholder = truncate(plainText(q.text), 200);
    qp.ignoreFocusOut = true;
    const other = { label: '$(edit) Something else…', id: undefined, alwaysShow: true };
    const markDone = { label: '$(check) Mark done', id: undefined, alwaysShow: true, detail: 'The agent only reported: finish the task (ready to merge).' };
    qp.items = [...q.options.map((o) => ({ label: o.label, id: o.id })), ...((q.allowText || q.kind === 'question') && !multi ? [other] : []),
      ...(q.closing && !multi ? [markDone] : [])];
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
    if (chosen.length === 1 && chosen[0] === markDone) return this.markDone(t, q);
    if (chosen.length === 1 && chosen[0].id === undefined) {
      if (chosen[0] !== other) return this.respond(t, q, { text: chosen[0].label });
      const text = await this.input(p, { title: `"${t.title}" asks`, prompt: q.text, countdown: q.expiresAt });
      if (text !== undefined) await this.respond(t, q, { text });
      return;
    }
    await this.respond(t, q, { optionId: chosen.map((c) => c.id).join(',') });
  }

  input(p: Prompt, o: { title: string; prompt: string; value?: string; countdown?: string }): Promise<string | undefined> {
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

  /**
   * After a dismissed sub-step (Escape in Allow Always…, in Deny with a
   * message…), the question is still open: its notification comes back,
   * rather than the question hiding until its row is clicked.
   */
  reopen(t: Task, q: Question, p: Prompt) {
    this.prompts.delete(`${t.id}/${q.id}`);
    void p;
    const cur = this.f.task(t.id);
    if (cur?.pendingQuestion?.id === q.id) this.prompt(cur, cur.pendingQuestion);
  }

  /**
   * An answer given on the question's card in the task view. The
   * notification is taken away first (answering either clears both: the
   * card goes when the task's question does).
   */
  async fromView(taskId: string, questionId: string, m: { action?: string; optionId?: string; text?: string }) {
    const t = this.f.task(taskId);
    const q = t?.pendingQuestion;
    if (!t || !q || q.id !== questionId) {
      void info(`Familiar: that question was already answered.`);
      return;
    }
    trace({ ev: 'cardAnswer', task: taskId, question: questionId, action: m.action });
    const key = `${t.id}/${q.id}`;
    const closeToast = () => { const p = this.prompts.get(key); p?.close(); };
    switch (m.action) {
      case 'review':
        return this.review(t, q);
      case 'allow':
        closeToast();
        return this.respond(t, q, { optionId: 'allow' });
      case 'deny':
        closeToast();
        return this.respond(t, q, { optionId: 'deny', ...(m.text ? { text: m.text } : {}) });
      case 'acceptEdits':
        closeToast();
        return this.respond(t, q, { optionId: 'mode_accept_edits' });
      case 'always': {
        const grant = await this.pickGrant(t, q, alwaysChoices(q));
        if (!grant) return;
        const cur = this.f.task(t.id);
        if (cur?.pendingQuestion?.id !== q.id) return;
        closeToast();
        return this.respond(t, q, { optionId: grant.id, grantScope: grant.scope });
      }
      case 'option':
        closeToast();
        // A suggested answer read from the question's words is sent as those words.
        return this.respond(t, q, m.optionId ? { optionId: m.optionId } : { text: String(m.text ?? '') });
      case 'text':
        if (!m.text?.trim()) return;
        closeToast();
        return this.respond(t, q, { text: m.text });
      case 'markDone':
        closeToast();
        return this.markDone(t, q);
    }
  }

  /** Whether the question was answered meanwhile (here, elsewhere, by policy or timeout). */
  stale(t: Task, q: Question, p: Prompt): boolean {
    const key = `${t.id}/${q.id}`;
    const by = this.resolved.get(key);
    const cur = this.f.task(t.id);
    if (by || (cur && cur.pendingQuestion?.id !== q.id)) {
      void info(`Familiar: "${t.title}" — that question was already answered${by ? ` (${decidedLabel(by)})` : ''}.`);
      this.prompts.delete(key);
      void p;
      return true;
    }
    return false;
  }

  async respond(t: Task, q: Question, a: { optionId?: string; text?: string; updatedInput?: any; grantScope?: GrantScope }) {
    const key = `${t.id}/${q.id}`;
    try {
      await this.f.connected().request('task/respond', { id: t.id, questionId: q.id, ...a });
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

  hidePrompt(taskId: string, questionId: string) {
    this.prompts.get(`${taskId}/${questionId}`)?.close();
  }

  closePrompt(key: string, decidedBy: string) {
    this.resolved.set(key, decidedBy);
    if (this.resolved.size > 500) this.resolved.delete(this.resolved.keys().next().value!);
    const p = this.prompts.get(key);
    if (!p) return;
    this.prompts.delete(key);
    p.close();
    if (decidedBy === 'timeout') {
      const t = this.f.task(p.taskId);
      // Short: a notification without buttons shows one line.
      void warn(`Familiar: "${t?.title ?? p.taskId}" got no answer in time: denied.`);
    }
  }

  async answer(id: string) {
    const t = this.f.task(id);
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
}
