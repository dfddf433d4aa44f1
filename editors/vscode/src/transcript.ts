// A task's structured transcript (task/transcript) as the task view and the
// stream driver's terminal show it: chunks of one response joined, each tool
// call one item updated in place, the plan one checklist, usage summed per
// turn. Pure: no VS Code, so the fast tests cover it.

import type { PlanItem, Question, Task, TaskHookNotification, ToolCall, TranscriptEntry, Usage } from './protocol';
import { statusFinished, statusHoldsWorktree } from './protocol';
import { suggestedAnswers } from './options';
import { blockedLabel, clock, duration, editTools, notRetrying, estimateOrWhyNot, mcpTool, permissionDetail, permissionWhat, heldInQueue, money, PathPlaces, plainText, relPath, secondsUntil, shortPath, taskLabel, taskStatusText, truncate, undoable } from './model';

export type ItemKind = 'prompt' | 'text' | 'thinking' | 'tool' | 'plan' | 'turn' | 'hook';

/** One row of the view. key is stable across updates of the same row. */
export interface Item {
  key: string;
  kind: ItemKind;
  at: string;
  text?: string;
  call?: ToolCall;
  plan?: PlanItem[];
  /** A turn's usage: its responses summed. */
  usage?: Usage;
  /** A hook call of a verbose task (task/hook): its name and payload. */
  hook?: { name: string; payload: unknown; truncated?: boolean };
  /**
   * The task's first prompt: familiar's rendered profile template around
   * the person's words, which the view and the terminal show instead.
   */
  first?: boolean;
}

export class Transcript {
  readonly items: Item[] = [];
  private readonly byKey = new Map<string, Item>();
  /** The last seq applied: a replayed entry at or below it is not applied twice. */
  lastSeq = 0;
  private n = 0;
  private turn?: Item;
  /** The session's running total, from the last usage entry. */
  total?: Usage;
  private prompts = 0;
  /**
   * Plans of TodoWrite calls not finished yet, by call id: a plan shows once
   * its call succeeded (a failed TodoWrite set nothing, and its checklist
   * ticked items the agent never got to record).
   */
  private readonly plans = new Map<string, PlanItem[]>();
  private lastTodoWrite?: string;
  /** Items the last add changed besides the one it returned (a plan whose call ended): taken by alsoChanged. */
  private also: Item[] = [];

  /** The items the last add changed besides the one it returned. */
  alsoChanged(): Item[] {
    return this.also.splice(0);
  }

  /** Applies one entry; returns the item it added or changed. */
  add(e: TranscriptEntry, seq = 0): Item | undefined {
    if (seq) {
      if (seq <= this.lastSeq) return undefined;
      this.lastSeq = seq;
    }
    switch (e.kind) {
      case 'prompt':
        this.turn = undefined;
        return this.push({ key: `p${++this.n}`, kind: 'prompt', at: e.at, text: e.text ?? '', first: this.prompts++ === 0 || undefined });
      case 'text':
      case 'thinking': {
        // Chunks of one response's block share messageId and follow each other.
        const last = this.items[this.items.length - 1];
        if (last && last.kind === e.kind && e.messageId && last.key.startsWith(`${e.kind}:${e.messageId}:`)) {
          last.text = (last.text ?? '') + (e.text ?? '');
          return last;
        }
        return this.push({ key: `${e.kind}:${e.messageId ?? ''}:${++this.n}`, kind: e.kind, at: e.at, text: e.text ?? '' });
      }
      case 'tool_call': {
        if (!e.toolCall) return undefined;
        const c = e.toolCall;
        if (c.name === 'TodoWrite') this.lastTodoWrite = c.id;
        const key = `tool:${c.id}`;
        const old = this.byKey.get(key);
        if (old) {
          old.call = c;
          // Its plan, once the call has succeeded (see plans).
          const plan = this.plans.get(c.id);
          if (plan && (c.status === 'completed' || c.status === 'failed')) {
            this.plans.delete(c.id);
            if (c.status === 'completed') this.also.push(this.setPlan(plan, e.at));
          }
          return old;
        }
        return this.push({ key, kind: 'tool', at: e.at, call: c });
      }
      case 'plan': {
        // A plan follows the TodoWrite call that set it: it waits for the call's end.
        const call = this.lastTodoWrite ? this.byKey.get(`tool:${this.lastTodoWrite}`)?.call : undefined;
        if (call && call.status !== 'completed') {
          if (call.status !== 'failed') this.plans.set(call.id, e.plan ?? []);
          return undefined;
        }
        return this.setPlan(e.plan ?? [], e.at);
      }
      case 'usage': {
        if (!e.usage) return undefined;
        if (e.usage.total) this.total = e.usage.total;
        if (!this.turn) {
          this.turn = this.push({ key: `turn${++this.n}`, kind: 'turn', at: e.at, usage: zeroUsage() });
        }
        addUsage(this.turn.usage!, e.usage);
        return this.turn;
      }
    }
    return undefined;
  }

  /**
   * A task/hook of a verbose task: one row in the conversation where it
   * happened. Hooks share the seq of transcript entries, so the same check
   * keeps a replayed one from showing twice.
   */
  hook(n: Pick<TaskHookNotification, 'name' | 'payload' | 'truncated'>, seq = 0, at = ''): Item | undefined {
    if (seq) {
      if (seq <= this.lastSeq) return undefined;
      this.lastSeq = seq;
    }
    return this.push({ key: `hook${++this.n}`, kind: 'hook', at, hook: { name: n.name, payload: n.payload, truncated: n.truncated } });
  }

  private setPlan(plan: PlanItem[], at: string): Item {
    const old = this.byKey.get('plan');
    if (old) {
      old.plan = plan;
      return old;
    }
    return this.push({ key: 'plan', kind: 'plan', at, plan });
  }

  private push(it: Item): Item {
    this.items.push(it);
    this.byKey.set(it.key, it);
    return it;
  }
}

function zeroUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, responses: 0 };
}

function addUsage(into: Usage, u: Usage) {
  into.inputTokens += u.inputTokens;
  into.outputTokens += u.outputTokens;
  into.cacheReadTokens += u.cacheReadTokens;
  into.cacheWriteTokens += u.cacheWriteTokens;
  into.costUsd += u.costUsd;
  into.responses = (into.responses ?? 0) + (u.responses || 1);
  if (u.model) into.model = u.model;
}

/** "1.2k in · 340 out · $0.004": a usage in a line. */
export function usageText(u: Usage): string {
  const k = (n: number) => (n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n));
  const parts = [`${k(u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens)} tokens in`, `${k(u.outputTokens)} out`];
  if (u.costUsd) parts.push(money(u.costUsd));
  return parts.join(' · ');
}

/** A tool call's row: its title with files relative to the worktree, its status and duration. */
export function callRow(c: ToolCall, worktree?: string): { title: string; status: string; duration: string; files: string[] } {
  const files = (c.files ?? []).map((f) => relPath(f, worktree));
  let title = c.title || c.name;
  if (worktree) title = title.split(worktree.replace(/\/+$/, '') + '/').join('');
  // A file the title already names ("Read a.md") is not said again beside it.
  const named = new Set(title.split(/\s+/));
  return {
    title,
    status: c.status,
    duration: c.durationMs ? (c.durationMs < 1000 ? `${c.durationMs} ms` : duration(c.durationMs / 1000)) : '',
    files: files.filter((f) => !named.has(f)),
  };
}

/**
 * What the person asked, as they typed it in New Task: the description (the
 * title when it has none) and the acceptance criteria, for the first
 * prompt, which is familiar's profile template around these words.
 */
export function personWords(t: Pick<Task, 'title' | 'description' | 'acceptanceCriteria'>): string {
  const words = (t.description ?? '').trim() || t.title;
  const criteria = (t.acceptanceCriteria ?? []).filter((c) => c.trim());
  return criteria.length ? `${words}\n\nAcceptance criteria:\n${criteria.map((c) => `- ${c}`).join('\n')}` : words;
}

/**
 * A prompt as the conversation shows it, and who wrote it: the first one is
 * the person's words (not familiar's template around them); familiar's own
 * messages (a resume after a pause, a mode switch) say they are familiar's.
 */
export function promptShown(it: Item, person?: string): { text: string; who: 'You' | 'Familiar' } {
  if (it.first && person) return { text: person, who: 'You' };
  const text = it.text ?? '';
  return { text, who: /^familiar\b/i.test(text) ? 'Familiar' : 'You' };
}

/** The text of a transcript as a terminal shows it (the stream driver's): words, never JSON lines. */
export function itemAsText(it: Item, worktree?: string, person?: string): string {
  switch (it.kind) {
    case 'prompt': return `\x1b[1m> ${oneBlock(promptShown(it, person).text)}\x1b[0m\r\n`;
    case 'text': return `${oneBlock(it.text ?? '')}\r\n`;
    case 'thinking': return `\x1b[2m(thinking) ${truncate(it.text ?? '', 200)}\x1b[0m\r\n`;
    case 'tool': {
      const r = callRow(it.call!, worktree);
      const mark = r.status === 'completed' ? '✓' : r.status === 'failed' ? '✗' : '…';
      return `\x1b[36m${mark} ${r.title}\x1b[0m${r.duration ? ` \x1b[2m${r.duration}\x1b[0m` : ''}\r\n`;
    }
    case 'plan': return (it.plan ?? []).map((p) => `${p.status === 'completed' ? '[x]' : p.status === 'in_progress' ? '[~]' : '[ ]'} ${p.content}`).join('\r\n') + '\r\n';
    case 'turn': return `\x1b[2m${usageText(it.usage!)}\x1b[0m\r\n`;
    // A terminal shows the conversation: hook calls come before the entries they belong after.
    case 'hook': return '';
  }
}

/**
 * A hook call in a line: its name and what it is about (the tool and its
 * command or file, the prompt's start), from the payload claude sent.
 */
export function hookTitle(h: { name: string; payload: unknown }): string {
  const p = (h.payload && typeof h.payload === 'object' ? h.payload : {}) as Record<string, any>;
  const input = p.tool_input && typeof p.tool_input === 'object' ? p.tool_input : {};
  const about = typeof p.tool_name === 'string'
    ? [p.tool_name, typeof input.command === 'string' ? input.command : typeof input.file_path === 'string' ? input.file_path : ''].filter(Boolean).join(': ')
    : typeof p.prompt === 'string' ? p.prompt
      : typeof p.source === 'string' ? p.source
        : typeof p.reason === 'string' ? p.reason : '';
  return about ? `${h.name} — ${truncate(about.replace(/\s+/g, ' '), 120)}` : h.name;
}

function oneBlock(s: string): string {
  return s.replace(/\r?\n/g, '\r\n');
}

/** The task view's header: the task's state in words. */
export interface Header {
  title: string;
  state: string;
  /** Name, what shows, and the whole of it when that is shortened (its tooltip, and a Copy button). */
  facts: [string, string, string?][];
  actions: { command: string; label: string }[];
  cost?: string;
  question?: string;
}

export function header(t: Task, now: number, total?: Usage, where: PathPlaces = {}): Header {
  const facts: [string, string, string?][] = [];
  const activity = t.status === 'running' ? t.activityDetail || t.activity.replace('_', ' ') : '';
  facts.push(['Mode', t.mode], ['Type', t.type], ['Driver', t.driver]);
  // What the task was created with beyond its mode: elevated above all, which asks nothing.
  const dirs = (['elevated', 'think', 'verbose'] as const).filter((k) => t.directives?.[k]);
  if (dirs.length) facts.push(['Directives', dirs.join(', ')]);
  if (t.worktree) {
    // Outside the repository (under $XDG_DATA_HOME), its whole path is long.
    facts.push(['Branch', t.worktree.branch], ['Worktree', shortPath(t.worktree.path, where.repo, where.home), t.worktree.path]);
  }
  if (t.status === 'queued' && t.queuePosition !== undefined) facts.push(['Queue', `#${t.queuePosition}`]);
  const estimate = estimateOrWhyNot(t, now);
  if (estimate) facts.push(['Estimate', estimate]);
  if (undoable(t, now)) facts.push(['Undo', `possible for ${clock(Math.ceil(secondsUntil(t.undoableUntil, now) ?? 0))} more`]);
  if (t.blocked) facts.push(['Blocked', t.blocked.detail ? plainText(notRetrying(t.blocked.detail)) : blockedLabel(t.blocked.reason)]);
  const u = t.usage ?? total;
  const none = !!t.result?.noChanges;
  const live = !statusFinished(t.status);
  const a: [boolean, string, string][] = [
    [t.status === 'waiting', 'answer', 'Answer…'],
    // A queued task paused is held in the queue until resumed.
    [statusHoldsWorktree(t.status), 'pause', 'Pause'],
    [t.status === 'paused', 'resume', 'Resume'],
    [statusFinished(t.status), 'continue', 'Continue…'],
    [!none && !!t.worktree && t.status !== 'queued', 'showChanges', 'Show Changes'],
    [t.status === 'merging' && !none, 'merge', 'Merge…'],
    [t.status === 'merging' && !none && (t.result?.changedFiles.length ?? 0) > 1, 'mergeFiles', 'Merge Some Files…'],
    [undoable(t, now), 'undo', 'Undo'],
    [t.driver === 'pty' || live, 'openTerminal', 'Terminal'],
    // Try the change before keeping it: the worktree in a window of its own, or a shell in it.
    [!!t.worktree && t.status !== 'queued' && t.status !== 'merged', 'openWorktree', 'Open Worktree'],
    [!!t.worktree && t.status !== 'queued' && t.status !== 'merged', 'terminalInWorktree', 'Terminal in Worktree'],
    [['blocked', 'cancelled'].includes(t.status), 'retry', 'Retry'],
    // The mode of a task that still works (or waits to go on): the agent goes on with the new mode's tools.
    [live || t.status === 'blocked', 'setMode', 'Change Mode…'],
    [live, 'cancel', 'Cancel…'],
    // A summary cut at 30 KB opens whole (task/text).
    [!!t.result?.truncated && !!t.result.summaryRef, 'readSummary', 'Whole summary'],
    [statusFinished(t.status), 'remove', 'Remove…'],
  ];
  return {
    title: taskLabel(t),
    state: (heldInQueue(t) ? 'paused in the queue (Resume queues it again)' : taskStatusText(t)) + (activity ? ` — ${activity}` : ''),
    facts,
    actions: a.filter(([ok]) => ok).map(([, command, label]) => ({ command, label })),
    cost: u ? usageText(u) : t.result?.costUsd !== undefined ? money(t.result.costUsd) : undefined,
    question: t.pendingQuestion ? truncate(t.pendingQuestion.text, 300) : undefined,
  };
}

/**
 * A line diff for showing an edit in the view: [' ' | '-' | '+', line][],
 * by longest common subsequence; a large edit (over 500 lines a side) is
 * shown as all removed then all added (the diff editor is a click away).
 */
export function lineDiff(before: string, after: string): [string, string][] {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  if (a.length > 500 || b.length > 500) return [...a.map((l) => ['-', l] as [string, string]), ...b.map((l) => ['+', l] as [string, string])];
  const n = a.length, m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out: [string, string][] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([' ', a[i]]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(['-', a[i++]]);
    else out.push(['+', b[j++]]);
  }
  while (i < n) out.push(['-', a[i++]]);
  while (j < m) out.push(['+', b[j++]]);
  return out;
}

/** What the webview is sent for one item: everything it shows, as plain data. */
export interface ItemView {
  key: string;
  kind: ItemKind;
  text?: string;
  row?: { title: string; status: string; duration: string; files: string[]; kind: string };
  input?: string;
  result?: string;
  resultWhole?: boolean;
  diffs?: { path: string; lines: [string, string][] }[];
  plan?: PlanItem[];
  usage?: string;
  /** A prompt's author: the person, or familiar (a resume, a mode switch). */
  who?: string;
}

export function itemView(it: Item, worktree?: string, person?: string): ItemView {
  switch (it.kind) {
    case 'prompt': {
      const p = promptShown(it, person);
      return { key: it.key, kind: it.kind, text: p.text, who: p.who };
    }
    case 'tool': {
      const c = it.call!;
      let input = c.input === undefined ? '' : JSON.stringify(c.input, null, 2);
      if (input.length > 4000) input = input.slice(0, 4000) + '\n[clipped here: the whole input is in the task\'s log]';
      return {
        key: it.key, kind: it.kind,
        row: { ...callRow(c, worktree), kind: c.kind },
        input,
        result: c.result,
        resultWhole: !!c.resultRef,
        diffs: (c.diffs ?? []).map((d) => ({ path: relPath(d.path, worktree), lines: lineDiff(d.oldText, d.newText) })),
      };
    }
    case 'turn': return { key: it.key, kind: it.kind, usage: usageText(it.usage!) };
    case 'hook': {
      let input = JSON.stringify(it.hook!.payload ?? {}, null, 2);
      if (input.length > 4000) input = input.slice(0, 4000) + '\n[clipped here]';
      else if (it.hook!.truncated) input += '\n[familiar cut this payload at 30 KB]';
      return { key: it.key, kind: it.kind, text: hookTitle(it.hook!), input };
    }
    case 'plan': return { key: it.key, kind: it.kind, plan: it.plan };
    default: return { key: it.key, kind: it.kind, text: it.text };
  }
}

/** The task view's message box: whether it takes a message now, what sending does, and whether a turn can be stopped. */
export interface Compose {
  enabled: boolean;
  note: string;
  stop: boolean;
}

export function composeState(t: Pick<Task, 'status' | 'blocked' | 'pendingQuestion'>): Compose {
  const q = t.pendingQuestion;
  if (t.status === 'waiting' && q && q.kind === 'question' && q.allowText) {
    // Its turn is over: the agent asked in words, and the message answers it.
    return { enabled: true, stop: false, note: 'Enter answers the agent\'s question above with your message.' };
  }
  switch (t.status) {
    case 'queued':
    case 'starting':
      return { enabled: true, stop: false, note: 'The agent has not started yet: your message goes to it once it has.' };
    case 'running':
      return { enabled: true, stop: true, note: 'Enter queues your message: the agent gets it when it finishes this turn. Stop and send interrupts the turn and sends it now.' };
    case 'waiting':
      return { enabled: true, stop: true, note: 'The agent waits on the question above. Enter queues your message for after it; Stop and send ends the turn and sends it now.' };
    case 'paused':
      return { enabled: true, stop: false, note: 'Enter continues the task in its conversation, with your message.' };
    case 'blocked':
      if (t.blocked?.reason === 'cancelled_by_user') return { enabled: false, stop: false, note: 'You cancelled this task: Retry starts it again.' };
      return { enabled: true, stop: false, note: 'Enter continues the task in its conversation and worktree, with your message.' };
    case 'merging':
      return { enabled: true, stop: false, note: 'Enter sends a follow-up: the agent goes on in the same worktree and conversation.' };
    case 'merged':
      return { enabled: false, stop: false, note: 'Merged: a new task takes it from here.' };
    case 'cancelled':
      return { enabled: false, stop: false, note: 'Cancelled: Retry starts it again.' };
  }
  return { enabled: false, stop: false, note: '' };
}

/** The pending question as a card in the task view's conversation. */
export interface Card {
  id: string;
  kind: 'permission' | 'question';
  /** "Write docs/notes.md", "Run a command", or the question's words. */
  title: string;
  /** A permission's whole command or path (wrapped, never cut). */
  detail?: string;
  reviewable?: boolean;
  /** Allow Always… is offered (a rule can cover the call), else why not in words. */
  always?: boolean;
  alwaysWhyNot?: string;
  acceptEdits?: boolean;
  /** Suggested answers: the question's own options (id) or ones read from its words (text). */
  options: { id?: string; label: string }[];
  allowText: boolean;
  multi?: boolean;
  closing?: boolean;
  /** A question in words: the message box answers it (composeState says so). */
  answersInBox?: boolean;
  /** When it is denied (or dropped) unanswered. */
  expiresAt?: string;
}

/** Whether an allow-always option remembers anything: familiar's says so when no rule can cover the call. */
export function alwaysCovers(q: Question): boolean {
  return q.options.some((o) => (o.id === 'allow_always' || o.id === 'allow_always_exact') && !/nothing is remembered/i.test(o.label));
}

/** Why a permission offers no Allow Always, in words; undefined when it does. */
export function alwaysWhyNot(q: Question): string | undefined {
  if (alwaysCovers(q)) return undefined;
  const cmd = typeof q.input?.command === 'string' ? q.input.command : '';
  if (/&&|\|\||[|;]|\$\(|`/.test(cmd)) {
    const long = cmd.length > 1000 ? ', too long to be remembered word for word,' : '';
    return `Allow Always is not offered: this command chains several commands (&&, |, ;)${long} and no rule can cover it, so nothing would be remembered. Allow lets it run this once.`;
  }
  if (q.options.some((o) => o.id === 'allow_always')) return 'Allow Always is not offered: no rule can cover this call, so nothing would be remembered. Allow lets it run this once.';
  return undefined;
}

export function questionCard(q: Question, worktree?: string): Card {
  if (q.kind === 'permission') {
    const edit = editTools.includes(q.tool ?? '');
    const detail = permissionDetail(q, worktree);
    const what = permissionWhat(q, worktree);
    return {
      id: q.id, kind: 'permission',
      title: typeof q.input?.command === 'string' ? `Wants to run ${q.tool ?? 'a command'}:` : `Wants to ${what.charAt(0).toLowerCase() + what.slice(1)}`,
      detail: typeof q.input?.command === 'string' ? detail : undefined,
      reviewable: edit || !!mcpTool(q.tool) || detail.length > 160 || !!q.truncated || (!detail && q.input !== undefined),
      always: alwaysCovers(q),
      alwaysWhyNot: alwaysWhyNot(q),
      acceptEdits: q.options.some((o) => o.id === 'mode_accept_edits'),
      options: [], allowText: true, expiresAt: q.expiresAt,
    };
  }
  // Its own options, else the ones its words list ("1. Postgres 2. SQLite"), answered with their words.
  const own = q.options.map((o) => ({ id: o.id, label: o.label }));
  const options = own.length ? own : suggestedAnswers(q.text).map((label) => ({ label }));
  return {
    id: q.id, kind: 'question', title: q.text, options, allowText: q.allowText || q.kind === 'question',
    answersInBox: q.kind === 'question' && q.allowText,
    multi: !!q.multiSelect, closing: !!q.closing, expiresAt: q.expiresAt,
  };
}
