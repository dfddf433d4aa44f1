// Pure helpers the view, status bar and prompts share: grouping, labels,
// times. No VS Code dependency, so the fast tests cover them.

import type { Question, Status, Task } from './protocol';

export type GroupId = 'waiting' | 'running' | 'queued' | 'ready' | 'blocked' | 'done';

export const groups: { id: GroupId; label: string; statuses: Status[] }[] = [
  { id: 'waiting', label: 'Waiting on you', statuses: ['waiting'] },
  { id: 'running', label: 'Running', statuses: ['starting', 'running', 'paused'] },
  { id: 'queued', label: 'Queued', statuses: ['queued'] },
  { id: 'ready', label: 'Ready to merge', statuses: ['merging'] },
  { id: 'blocked', label: 'Blocked', statuses: ['blocked'] },
  { id: 'done', label: 'Done', statuses: ['merged', 'cancelled'] },
];

export function groupOf(s: Status): GroupId {
  return groups.find((g) => g.statuses.includes(s))?.id ?? 'done';
}

/** Tasks of a group in display order: queue order for queued, newest first otherwise. */
export function tasksIn(group: GroupId, tasks: Iterable<Task>): Task[] {
  const out = [...tasks].filter((t) => groupOf(t.status) === group);
  if (group === 'queued') out.sort((a, b) => (a.queuePosition ?? 1e9) - (b.queuePosition ?? 1e9));
  else out.sort((a, b) => compareTime(b.createdAt, a.createdAt));
  return out;
}

export interface Counts { running: number; waiting: number; queued: number; ready: number }

export function counts(tasks: Iterable<Task>): Counts {
  const c: Counts = { running: 0, waiting: 0, queued: 0, ready: 0 };
  for (const t of tasks) {
    const g = groupOf(t.status);
    if (g === 'running') c.running++;
    else if (g === 'waiting') c.waiting++;
    else if (g === 'queued') c.queued++;
    else if (g === 'ready') c.ready++;
  }
  return c;
}

const activityLabel: Record<string, string> = {
  thinking: 'thinking',
  writing: 'writing',
  running_command: 'running a command',
  idle: 'idle',
  unknown: '',
};

/** What a running task is doing, in words; "" while that is not known. */
export function activityText(a: string): string {
  return activityLabel[a] ?? '';
}

/**
 * The one-line description of a task. coarse (the tree) shows elapsed time
 * in whole minutes past the first one, so 30 running tasks do not redraw
 * the tree every second; the details document shows seconds.
 */
export function describe(t: Task, now: number, coarse = false): string {
  const parts: string[] = [];
  switch (t.status) {
    case 'running':
      parts.push(activityLabel[t.activity] || 'running');
      break;
    case 'starting':
      parts.push('starting');
      break;
    case 'paused':
      parts.push('paused');
      break;
    case 'waiting':
      parts.push(questionSummary(t.pendingQuestion));
      break;
    case 'queued':
      if (t.queuePosition !== undefined) parts.push(`#${t.queuePosition + 1} in queue`);
      if (t.estimatedStartSec !== undefined) parts.push(`starts in ~${duration(t.estimatedStartSec)}`);
      break;
    case 'blocked':
      parts.push(t.blocked ? blockedLabel(t.blocked.reason) : 'blocked');
      break;
    case 'merging':
      parts.push(`${t.result?.changedFiles.length ?? 0} file(s) changed`);
      break;
    default:
      parts.push(t.status);
  }
  const el = elapsedSec(t, now);
  if (el !== undefined && t.status !== 'queued') parts.push(coarse && el >= 60 && el < 3600 ? `${Math.floor(el / 60)}m` : duration(el));
  if (t.result?.costUsd !== undefined) parts.push(`$${t.result.costUsd.toFixed(2)}`);
  if (t.status === 'waiting' && t.pendingQuestion?.expiresAt) {
    const left = secondsLeft(t.pendingQuestion.expiresAt, now);
    if (left !== undefined) parts.push(`${clock(left)} left`);
  }
  return parts.filter(Boolean).join(' · ');
}

export function blockedLabel(reason: string): string {
  return ({
    timeout: 'no progress (timeout)',
    agent_failed: 'agent failed',
    agent_exited: 'agent exited',
    start_failed: 'could not start',
    interrupted: 'interrupted',
    cancelled_by_user: 'cancelled',
  } as Record<string, string>)[reason] ?? reason;
}

export function questionSummary(q?: Question): string {
  if (!q) return 'waiting on you';
  if (q.kind === 'permission') return `asks to use ${q.tool ?? 'a tool'}${permissionDetail(q) ? ': ' + truncate(permissionDetail(q), 40) : ''}`;
  return `asks: ${truncate(q.text, 50)}`;
}

/** What a permission request wants to do, e.g. the Bash command or the file path. */
export function permissionDetail(q: Question): string {
  const input = q.input ?? {};
  if (typeof input.command === 'string') return input.command;
  if (typeof input.file_path === 'string') return input.file_path;
  if (typeof input.path === 'string') return input.path;
  if (typeof input.url === 'string') return input.url;
  if (typeof input.pattern === 'string') return input.pattern;
  return '';
}

/** Whether a choice question accepts several options (AskUserQuestion's multiSelect). */
export function isMultiSelect(q: Question): boolean {
  if (q.multiSelect) return true;
  const qs = q.input?.questions;
  if (Array.isArray(qs)) {
    const match = qs.find((x: any) => x?.question === q.text) ?? (qs.length === 1 ? qs[0] : undefined);
    return !!match?.multiSelect;
  }
  return false;
}

export function elapsedSec(t: Task, now: number): number | undefined {
  if (!t.startedAt) return undefined;
  const start = Date.parse(t.startedAt);
  const end = t.finishedAt ? Date.parse(t.finishedAt) : now;
  if (isNaN(start) || isNaN(end)) return undefined;
  return Math.max(0, Math.round((end - start) / 1000));
}

export function secondsLeft(expiresAt: string, now: number): number | undefined {
  const t = Date.parse(expiresAt);
  if (isNaN(t)) return undefined;
  return Math.max(0, Math.ceil((t - now) / 1000));
}

/** 75 → "1m 15s", 3700 → "1h 1m". */
export function duration(sec: number): string {
  sec = Math.max(0, Math.round(sec));
  if (sec < 60) return `${sec}s`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m ${sec % 60}s`;
  return `${Math.floor(sec / 3600)}h ${Math.floor((sec % 3600) / 60)}m`;
}

/** 75 → "1:15". */
export function clock(sec: number): string {
  const m = Math.floor(sec / 60), s = sec % 60;
  return `${m}:${String(s).padStart(2, '0')}`;
}

/**
 * Time left in whole minutes, rounded down, for a notification: its text is
 * drawn anew on every change, and a click that lands while it is redrawn is
 * lost, so it changes once a minute rather than each second.
 */
export function roughly(sec: number): string {
  return sec < 60 ? 'under a minute' : `${Math.floor(sec / 60)} min`;
}

/**
 * Text a notification shows as it is: VS Code renders "[text](command:…)" in
 * a notification's message as a link that runs the command, and task titles,
 * summaries, questions and commands come from agents and repositories. A
 * zero-width space between "]" and "(" keeps the text looking the same.
 */
export function noLinks(s: string): string {
  return s.replace(/\]\(/g, ']\u200b(');
}

export function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
}

/**
 * Compares two RFC 3339 times exactly (familiar sends nanoseconds; Date.parse
 * keeps milliseconds): negative if a < b.
 */
export function compareTime(a: string, b: string): number {
  const pa = split(a), pb = split(b);
  if (pa[0] !== pb[0]) return pa[0] - pb[0];
  return pa[1] < pb[1] ? -1 : pa[1] > pb[1] ? 1 : 0;
}

export function newerOrSame(a: string, b: string): boolean {
  return compareTime(a, b) >= 0;
}

function split(t: string): [number, string] {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/.exec(t ?? '');
  if (!m) return [Date.parse(t) || 0, ''];
  return [Date.parse(m[1] + (m[3] || 'Z')) || 0, (m[2] ?? '').padEnd(9, '0')];
}

/** Whether task/undo may still apply: merged within the undo window (familiar has the last word). */
export function undoable(t: Task, now: number, undoWindowSec = 300): boolean {
  if (t.status !== 'merged') return false;
  const at = Date.parse(t.updatedAt);
  return !isNaN(at) && now - at < undoWindowSec * 1000;
}
