// A task's structured transcript (task/transcript) as the task view and the
// stream driver's terminal show it: chunks of one response joined, each tool
// call one item updated in place, the plan one checklist, usage summed per
// turn. Pure: no VS Code, so the fast tests cover it.

import type { PlanItem, Task, TaskHookNotification, ToolCall, TranscriptEntry, Usage } from './protocol';
import { statusFinished, statusHoldsWorktree } from './protocol';
import { clock, duration, estimateOrWhyNot, heldInQueue, money, PathPlaces, plainText, relPath, secondsUntil, shortPath, taskLabel, taskStatusText, truncate, undoable } from './model';

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

  /** Applies one entry; returns the item it added or changed. */
  add(e: TranscriptEntry, seq = 0): Item | undefined {
    if (seq) {
      if (seq <= this.lastSeq) return undefined;
      this.lastSeq = seq;
    }
    switch (e.kind) {
      case 'prompt':
        this.turn = undefined;
        return this.push({ key: `p${++this.n}`, kind: 'prompt', at: e.at, text: e.text ?? '' });
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
        const key = `tool:${e.toolCall.id}`;
        const old = this.byKey.get(key);
        if (old) {
          old.call = e.toolCall;
          return old;
        }
        return this.push({ key, kind: 'tool', at: e.at, call: e.toolCall });
      }
      case 'plan': {
        const old = this.byKey.get('plan');
        if (old) {
          old.plan = e.plan ?? [];
          return old;
        }
        return this.push({ key: 'plan', kind: 'plan', at: e.at, plan: e.plan ?? [] });
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
  return {
    title,
    status: c.status,
    duration: c.durationMs ? (c.durationMs < 1000 ? `${c.durationMs} ms` : duration(c.durationMs / 1000)) : '',
    files,
  };
}

/** The text of a transcript as a terminal shows it (the stream driver's): words, never JSON lines. */
export function itemAsText(it: Item, worktree?: string): string {
  switch (it.kind) {
    case 'prompt': return `\x1b[1m> ${oneBlock(it.text ?? '')}\x1b[0m\r\n`;
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
  if (t.blocked) facts.push(['Blocked', plainText(t.blocked.detail || t.blocked.reason)]);
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
    [undoable(t, now), 'undo', 'Undo'],
    [t.driver === 'pty' || live, 'openTerminal', 'Terminal'],
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
}

export function itemView(it: Item, worktree?: string): ItemView {
  switch (it.kind) {
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
