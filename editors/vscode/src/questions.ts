// Questions of agents: permissions, choices and prose questions, shown as
// notifications that close when the question is settled anywhere.

import * as vscode from 'vscode';
import type { Familiar } from './extension';
import { clock, isMultiSelect, noLinks, permissionDetail, roughly, secondsLeft, taskLabel, truncate } from './model';
import type { Question, Task } from './protocol';
import { Code } from './protocol';
import { decidedLabel, error, info, localTime, trace, warn } from './ui';

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

  constructor(private readonly f: Familiar) {}


  prompt(t: Task, q: Question) {
    const key = `${t.id}/${q.id}`;
    if (this.prompts.has(key) || this.resolved.has(key)) return;
    const p: Prompt = { taskId: t.id, questionId: q.id, close: () => undefined };
    this.prompts.set(key, p);
    this.shownAt.set(q.id, Date.now());
    trace({ ev: 'prompt', task: t.id, question: q.id, title: t.title, detail: q.kind === 'permission' ? permissionDetail(q) : q.text });
    this.f.log.info(`question ${q.id} of "${t.title}" (${q.kind}): ${truncate(q.text, 200)}`);
    if (q.kind === 'permission') void this.permission(t, q, p);
    else void this.choiceToast(t, q, p);
  }

  async permission(t: Task, q: Question, p: Prompt) {
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

  async choiceToast(t: Task, q: Question, p: Prompt) {
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
  toastPrompt(p: Prompt, title: string, choices: string[], status: () => string): Promise<string | undefined> {
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
  answerPrompt(taskId: string, questionId: string, choice: string) {
    this.prompts.get(`${taskId}/${questionId}`)?.choose?.(choice);
  }

  /** The QuickPick / InputBox of a non-permission question. */
  async ask(t: Task, q: Question, p: Prompt) {
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

  /** After a dismissed sub-step, the question is still open: offer it again from the view. */
  reopen(t: Task, q: Question, p: Prompt) {
    this.prompts.delete(`${t.id}/${q.id}`);
    void p;
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

  async respond(t: Task, q: Question, a: { optionId?: string; text?: string; updatedInput?: any }) {
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
