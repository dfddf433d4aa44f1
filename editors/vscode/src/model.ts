// Pure helpers the view, status bar and prompts share: grouping, labels,
// times. No VS Code dependency, so the fast tests cover them.

import type { Question, SettingsUpdate, Status, Task, TaskCompletedNotification } from './protocol';
import { statusFinished, statusLive } from './protocol';

export type GroupId = 'waiting' | 'running' | 'queued' | 'ready' | 'blocked' | 'done' | 'cancelled';

export const groups: { id: GroupId; label: string; statuses: Status[] }[] = [
  { id: 'waiting', label: 'Waiting on you', statuses: ['waiting'] },
  { id: 'running', label: 'Running', statuses: ['starting', 'running', 'paused'] },
  { id: 'queued', label: 'Queued', statuses: ['queued'] },
  { id: 'ready', label: 'Ready to merge', statuses: ['merging'] },
  { id: 'blocked', label: 'Blocked', statuses: ['blocked'] },
  { id: 'done', label: 'Done', statuses: ['merged'] },
  // A cancelled task did not get done: it is not among the done ones.
  { id: 'cancelled', label: 'Cancelled', statuses: ['cancelled'] },
];

export function groupOf(s: Status): GroupId {
  return groups.find((g) => g.statuses.includes(s))?.id ?? 'done';
}

/**
 * The group a task is shown in: by its status, except that a task that
 * finished having changed nothing is done, not ready to merge (there is
 * nothing to merge), whatever its status.
 */
export function groupOfTask(t: Task): GroupId {
  if (t.result?.noChanges && (t.status === 'merging' || t.status === 'merged')) return 'done';
  // Paused before it started: held in the queue (resume queues it again), not running.
  if (heldInQueue(t)) return 'queued';
  return groupOf(t.status);
}

/** A queued task paused: it never started, and waits for Resume. */
export function heldInQueue(t: Pick<Task, 'status' | 'startedAt'>): boolean {
  return t.status === 'paused' && !t.startedAt;
}

/** Tasks of a group in display order: queue order for queued, newest first otherwise. */
export function tasksIn(group: GroupId, tasks: Iterable<Task>): Task[] {
  const out = [...tasks].filter((t) => groupOfTask(t) === group);
  if (group === 'queued') out.sort((a, b) => (a.queuePosition ?? 1e9) - (b.queuePosition ?? 1e9));
  else out.sort((a, b) => compareTime(b.createdAt, a.createdAt));
  return out;
}

/** How many tasks are where; running counts the ones at work (a paused task is not). */
export interface Counts { running: number; waiting: number; queued: number; ready: number; blocked: number; paused?: number }

export function counts(tasks: Iterable<Task>): Counts {
  const c: Counts = { running: 0, waiting: 0, queued: 0, ready: 0, blocked: 0 };
  for (const t of tasks) {
    const g = groupOfTask(t);
    if (t.status === 'paused') c.paused = (c.paused ?? 0) + 1;
    else if (g === 'running') c.running++;
    else if (g === 'waiting') c.waiting++;
    else if (g === 'queued') c.queued++;
    else if (g === 'ready') c.ready++;
    else if (g === 'blocked') c.blocked++;
  }
  return c;
}

/** "1 task", "2 tasks": no "(s)" in what a person reads. */
export function plural(n: number, one: string, many = one + 's'): string {
  return `${n} ${n === 1 ? one : many}`;
}

const activityLabel: Record<string, string> = {
  thinking: 'thinking',
  writing: 'writing',
  running_command: 'running a command',
  idle: 'idle',
  unknown: '',
  stopped: 'stopped (claude was suspended)',
};

/** A status in words: "merging" is familiar's name for a task ready to merge. */
export function statusText(s: Status): string {
  return ({ merging: 'ready to merge', running: 'running', starting: 'starting', queued: 'queued', waiting: 'waiting on you', paused: 'paused', merged: 'merged', blocked: 'blocked', cancelled: 'cancelled' } as Record<string, string>)[s] ?? s;
}

/** A task's status in words: a task that finished having changed nothing is done, whatever its status. */
export function taskStatusText(t: Pick<Task, 'status' | 'result'>): string {
  if (t.result?.noChanges && (t.status === 'merging' || t.status === 'merged')) return 'done, no changes';
  return statusText(t.status);
}

/** A task's title as the tree and tabs show it: a retry says which attempt it is. */
export function taskLabel(t: Pick<Task, 'title' | 'attempt'>): string {
  return t.attempt > 1 ? `${t.title} (attempt ${t.attempt})` : t.title;
}

/**
 * A cost a person can read: cents, and under a cent not "$0.00" (a short
 * task costs a fraction of one) but the tenths of a cent.
 */
export function money(usd: number): string {
  if (usd <= 0) return '$0';
  if (usd < 0.001) return '<$0.001';
  if (usd < 0.01) return `$${usd.toFixed(3)}`;
  return `$${usd.toFixed(2)}`;
}

/** What a task cost so far: its result's, or while it runs its usage's. */
export function taskCost(t: Task): number | undefined {
  return t.result?.costUsd ?? (t.usage?.costUsd ? t.usage.costUsd : undefined);
}

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
      // activityDetail says it in words ("model error 500, retrying (3 of
      // 10)", the command it runs); the bare activity would say "thinking".
      parts.push(t.activityDetail ? truncate(t.activityDetail, 60) : activityLabel[t.activity] || 'running');
      break;
    case 'starting':
      parts.push('starting');
      break;
    case 'paused':
      parts.push(heldInQueue(t) ? 'held in the queue' : 'paused');
      break;
    case 'waiting':
      parts.push(questionSummary(t.pendingQuestion, t.worktree?.path));
      break;
    case 'queued':
      if (t.queuePosition !== undefined) parts.push(`#${t.queuePosition} in queue`); // the server counts from 1 (PROTOCOL.md)
      parts.push(estimateText(t, now));
      break;
    case 'blocked':
      parts.push(t.blocked ? reasonText({ reason: t.blocked.reason, httpStatus: t.blocked.status, resetsAt: t.blocked.resetsAt }) : 'blocked');
      break;
    case 'merging':
      parts.push(t.result?.noChanges ? 'done, no changes' : `${plural(t.result?.changedFiles.length ?? 0, 'file')} changed`);
      break;
    case 'merged':
      // While it can be undone, the time left instead of "merged" (the
      // row's status says merged): a narrow side bar cuts a row's end, and
      // "merged · undo for 4…" hid the time.
      parts.push(t.result?.noChanges ? 'done, no changes' : undoable(t, now) ? undoText(t, now, coarse) : 'merged');
      break;
    default:
      parts.push(statusText(t.status));
  }
  const el = elapsedSec(t, now);
  if (el !== undefined && t.status !== 'queued') parts.push(coarse && el >= 60 && el < 3600 ? `${Math.floor(el / 60)}m` : duration(el));
  if (t.status === 'running' || t.status === 'starting') parts.push(estimateText(t, now));
  const cost = taskCost(t);
  if (cost !== undefined) parts.push(money(cost));
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
    auth: 'login refused',
    api_error: 'API error',
    usage_limit: 'usage limit',
    budget: 'budget spent',
    cancelled: 'cancelled',
    merge: 'could not be merged twice',
    sideload_flags_disabled: 'skills or MCP servers refused by claude',
    session_held_by_background: 'its session is held by a background claude',
  } as Record<string, string>)[reason] ?? reason.replace(/_/g, ' ');
}

/** One end of a task (task/completed, or an older familiar's task/updated to blocked), as the extension announces it. */
export interface TaskEnd {
  id: string;
  status: Status;
  success: boolean;
  /** Why a failed end happened: a blocked reason, or "cancelled". */
  reason?: string;
  detail?: string;
  /** The API's HTTP status of an api_error (from the task). */
  httpStatus?: number;
  resetsAt?: string;
  noChanges?: boolean;
}

/** The end a task/completed notification announces, filled in from the task where an older familiar left fields out. */
export function endOf(c: TaskCompletedNotification, t?: Task): TaskEnd {
  const status = c.status ?? t?.status ?? (c.result?.success ? 'merging' : 'blocked');
  const success = c.result?.success ?? (status === 'merging' || status === 'merged');
  const b = status === 'blocked' ? t?.blocked : undefined;
  return {
    id: c.id, status, success,
    reason: c.reason || b?.reason || (status === 'cancelled' && !success ? 'cancelled' : undefined),
    detail: c.detail || b?.detail || undefined,
    httpStatus: b?.status,
    resetsAt: c.resetsAt || b?.resetsAt || undefined,
    noChanges: c.result?.noChanges ?? t?.result?.noChanges,
  };
}

/** The end an older familiar's task/updated to blocked stands for (it sent no task/completed for it). */
export function endOfTask(t: Task): TaskEnd {
  return {
    id: t.id, status: t.status, success: false, reason: t.blocked?.reason, detail: t.blocked?.detail || undefined,
    httpStatus: t.blocked?.status, resetsAt: t.blocked?.resetsAt, noChanges: t.result?.noChanges,
  };
}

/**
 * Announces every end of a task once. familiar sends task/completed for
 * every end; an older familiar sent it only on success, so a task that
 * became blocked is announced from its task/updated. When both arrive (in
 * either order, live or replayed after a reconnect) they are one end: the
 * first announces it, the second says nothing. A task that runs again
 * (continued, resumed) can end again, so going live forgets its last end.
 */
export class EndAnnouncer {
  /** Task id → the kind of end announced ("ok" or "failed") since it last ran. */
  private readonly ended = new Map<string, string>();
  /** Task id → its status in the last task/updated (the latest last, bounded). */
  private readonly seen = new Map<string, Status>();

  /** A task/completed: the end to announce, or undefined when it was announced already. */
  completed(c: TaskCompletedNotification, t?: Task): TaskEnd | undefined {
    const end = endOf(c, t);
    return this.once(end) ? end : undefined;
  }

  /** A task/updated: the end to announce when it is an older familiar's silent block. */
  updated(t: Task): TaskEnd | undefined {
    const was = this.seen.get(t.id);
    this.seen.delete(t.id);
    this.seen.set(t.id, t.status);
    if (this.seen.size > 2000) this.seen.delete(this.seen.keys().next().value!);
    // Back from merged by an undo: ready to merge again because the person
    // asked for it, not news (an end announced now, a replayed one, would
    // say "is ready to merge" to whoever just pressed Undo).
    if (was === 'merged' && t.status === 'merging') {
      this.ended.set(t.id, 'ok');
      return undefined;
    }
    if (!statusFinished(t.status)) {
      this.ended.delete(t.id);
      return undefined;
    }
    if (t.status !== 'blocked') return undefined;
    const end = endOfTask(t);
    return this.once(end) ? end : undefined;
  }

  /**
   * A task as (re)loaded at connect: an end it already had is not news. (Ends
   * replayed from task/events before it were announced.)
   */
  known(t: Task) {
    this.seen.set(t.id, t.status);
    if (!statusFinished(t.status) || this.ended.has(t.id)) return;
    if (t.status === 'blocked') this.ended.set(t.id, 'failed');
    else if (t.status === 'merging' || t.status === 'merged') this.ended.set(t.id, 'ok');
  }

  /** A task removed: nothing of it is kept. */
  forget(id: string) {
    this.ended.delete(id);
    this.seen.delete(id);
  }

  private once(end: TaskEnd): boolean {
    const kind = end.success ? 'ok' : 'failed';
    if (this.ended.get(end.id) === kind) return false;
    this.ended.set(end.id, kind);
    // Bounded: a window open for weeks sees thousands of tasks end.
    if (this.ended.size > 2000) this.ended.delete(this.ended.keys().next().value!);
    return true;
  }
}

/** Whether a task is still as an end left it (a replayed block may have been continued since, a success merged). */
export function stillEnded(t: Task, e: TaskEnd): boolean {
  if (e.success) return t.status === 'merging' || t.status === 'merged';
  return t.status === e.status;
}

export type EndAction = 'Show Changes' | 'Merge…' | 'Continue…' | 'Retry' | 'Open Terminal' | 'Run Doctor';

/** What a notification of a task's end says, and the actions it offers. */
export interface EndNotice { level: 'info' | 'warning'; text: string; actions: EndAction[] }

/** The reason of a failed end in words a person can act on (not the code). */
export function reasonText(e: Pick<TaskEnd, 'reason' | 'httpStatus' | 'resetsAt'>): string {
  switch (e.reason) {
    case 'auth': return 'the API refused its credentials';
    case 'api_error': return e.httpStatus ? `the API kept failing (HTTP ${e.httpStatus})` : 'the API could not be reached';
    case 'usage_limit': return e.resetsAt ? `the usage limit is reached until ${localClock(e.resetsAt)}` : 'the usage limit is reached';
    case 'budget': return 'it spent its budget';
    case 'timeout': return 'it made no progress for too long';
    case 'agent_failed': return 'the agent failed';
    case 'agent_exited': return 'the agent exited before it finished';
    case 'start_failed': return 'the agent could not start';
    case 'interrupted': return 'familiar stopped while it ran';
    case 'cancelled': case 'cancelled_by_user': return 'it was cancelled';
    case 'merge': return 'the merge queue could not merge it twice (a conflict or the verify command)';
    default: return e.reason ? e.reason.replace(/_/g, ' ') : 'it could not finish';
  }
}

/**
 * The actions that fit a failed end: Continue… where the same session can
 * go on (the API or time failed, not the work), Run Doctor where the setup
 * is wrong, Retry (a new attempt) and the terminal otherwise. At most
 * three: a toast cuts more buttons to "Al…".
 */
export function endActions(e: Pick<TaskEnd, 'status' | 'reason'>): EndAction[] {
  if (e.status === 'cancelled') return ['Retry', 'Open Terminal'];
  switch (e.reason) {
    case 'auth': return ['Run Doctor', 'Retry', 'Open Terminal'];
    case 'start_failed': return ['Run Doctor', 'Retry'];
    case 'api_error': case 'timeout': case 'interrupted': case 'usage_limit': case 'budget':
      return ['Continue…', 'Retry', 'Open Terminal'];
    default: return ['Retry', 'Open Terminal'];
  }
}

/** The notification of one end of the task titled title. */
export function endNotice(title: string, e: TaskEnd, r?: { changedFiles?: number; costUsd?: number; summary?: string }): EndNotice {
  const name = `Familiar · "${title}"`;
  // A summary that only says "done" adds nothing to "is done".
  const summary = r?.summary && !/^\s*done[.!]?\s*$/i.test(r.summary) ? ' ' + truncate(plainText(r.summary), 300) : '';
  if (e.success && e.noChanges) return { level: 'info', text: `${name} is done, no changes.${summary}`, actions: ['Continue…'] };
  if (e.success && e.status === 'merged') return { level: 'info', text: `${name} is merged (${plural(r?.changedFiles ?? 0, 'file')} changed).${summary}`, actions: ['Show Changes'] };
  if (e.success) {
    const cost = r?.costUsd !== undefined ? `, ${money(r.costUsd)}` : '';
    return { level: 'info', text: `${name} is ready to merge (${plural(r?.changedFiles ?? 0, 'file')} changed${cost}).${summary}`, actions: ['Show Changes', 'Merge…'] };
  }
  // Its last activity may still say "retrying (3 of 10)": over once it is blocked.
  const detail = e.detail ? ` — ${sentence(truncate(plainText(notRetrying(e.detail)), 240))}` : '';
  const what = e.status === 'cancelled' ? 'was cancelled' : `is blocked: ${reasonText(e)}`;
  return { level: 'warning', text: `${name} ${what}${detail}`, actions: endActions(e) };
}

/** A failure's words without the retry count the activity had while it still retried. */
export function notRetrying(s: string): string {
  return s.replace(/,?\s*retrying \(\d+ of \d+\)/g, '').replace(/^\s*[:,]\s*/, '');
}

function sentence(s: string): string {
  return /[.!?…]$/.test(s) ? s : s + '.';
}

function localClock(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function questionSummary(q?: Question, worktree?: string): string {
  if (!q) return 'waiting on you';
  if (q.kind === 'permission') return `asks to ${truncate(permissionWhat(q, worktree), 50)}`;
  return `asks: ${truncate(q.text, 50)}`;
}

/**
 * What a permission request wants to do, e.g. the Bash command or the file
 * path, relative to the task's worktree when inside it (the absolute path
 * is long enough to push the choices out of a notification).
 */
export function permissionDetail(q: Question, worktree?: string): string {
  const input = q.input ?? {};
  if (typeof input.command === 'string') return input.command;
  if (typeof input.file_path === 'string') return relPath(input.file_path, worktree);
  if (typeof input.notebook_path === 'string') return relPath(input.notebook_path, worktree);
  if (typeof input.path === 'string') return relPath(input.path, worktree);
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
 * The settings the extension sends familiar (initialize, settings/update)
 * from VS Code's familiar.* configuration; get reads one with its default
 * (package.json has the same defaults). The permission policy is added by
 * the caller (it may come from a file).
 */
export function settingsFrom(get: <T>(key: string, def: T) => T): SettingsUpdate {
  return {
    maxConcurrent: get('maxConcurrent', 3),
    defaultDriver: get<'pty' | 'stream'>('driver', 'pty'),
    approvalTimeoutSec: get('approvalTimeoutSec', 300),
    agentNice: get('agentNice', 10),
    undoWindowSec: get('undoWindowSec', 300),
    // "" lets the repository's .familiar/config.yaml say (familiar reads it).
    mergeVerify: get('mergeVerify', ''),
    removeWorktreeAfterMerge: get('removeWorktreeAfterMerge', false),
    // A finished task's claude stays this long for a follow-up (Continue…),
    // as familiar acp asks for its sessions: familiar's own default is 0.
    warmAgentSec: get('warmAgentSec', 600),
  };
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
  // Only as much of s as can be shown: a tree row's tooltip and its redraw
  // check cut a 100 KB description to 300 characters several times a second,
  // and collapsing the whole of it each time made 2.3 MB/s of garbage in the
  // extension host, whose collections then held its event loop for 60-150 ms
  // (bigview). Collapsing a prefix gives the prefix of the collapsed whole,
  // so once the prefix alone is longer than n the cut is the same.
  for (let take = 4 * n + 64; ; take *= 4) {
    if (take >= s.length) {
      const one = s.replace(/\s+/g, ' ').trim();
      return one.length > n ? one.slice(0, n - 1) + '…' : one;
    }
    const one = s.slice(0, take).replace(/\s+/g, ' ').trim();
    if (one.length > n) return one.slice(0, n - 1) + '…';
  }
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

/**
 * Whether the merge of a task may still be undone: merged, before its
 * undoableUntil. familiar sets undoableUntil exactly while task/undo is
 * accepted and does not re-send the task when it passes, so the client
 * counts down to it (a fixed 300 s from updatedAt was wrong for any other
 * undoWindowSec). Only a merge: familiar also steps back a finished task's
 * branch within the window, but an Undo on every finished task would read
 * as undoing its work.
 */
export function undoable(t: Task, now: number): boolean {
  if (t.status !== 'merged' || !t.undoableUntil) return false;
  return now < Date.parse(t.undoableUntil);
}

/** Seconds from now to an RFC 3339 time (negative once past); undefined when absent or unreadable. */
export function secondsUntil(iso: string | undefined, now: number): number | undefined {
  if (!iso) return undefined;
  const at = Date.parse(iso);
  return isNaN(at) ? undefined : (at - now) / 1000;
}

/**
 * How long undo remains: "undo for 4 min" while it is minutes (the tree then
 * redraws once a minute), "undo for 42s" in the last minute; precise
 * ("undo for 4:32") for the task view.
 */
export function undoText(t: Task, now: number, coarse = true): string {
  const left = secondsUntil(t.undoableUntil, now);
  if (left === undefined || left <= 0) return '';
  const s = Math.ceil(left);
  if (!coarse) return `undo for ${clock(s)}`;
  // Down, as the view's clock counts: "4 min" while it reads 4:24, never "5 min".
  return s >= 60 ? `undo for ${Math.floor(s / 60)} min` : `undo for ${s}s`;
}

/** An estimate's remaining time as a person reads it: "about 3 min", "under a minute". */
export function about(sec: number): string {
  return sec < 60 ? 'under a minute' : `about ${Math.round(sec / 60)} min`;
}

/**
 * A task's time estimate, counting down between task/updated: a running
 * task's "about 3 min left" to estimatedEndAt, a queued one's "starts in
 * about 2 min" to estimatedStartAt (estimatedStartSec from an older
 * familiar, as sent). Past the estimate it says so rather than "0 min".
 */
export function estimateText(t: Task, now: number): string {
  if (t.status === 'queued') {
    const s = secondsUntil(t.estimatedStartAt, now) ?? t.estimatedStartSec;
    if (s === undefined) return '';
    return s <= 0 ? 'starts soon' : `starts in ${about(s)}`;
  }
  if (statusLive(t.status)) {
    const s = secondsUntil(t.estimatedEndAt, now);
    if (s === undefined) return '';
    return s <= 0 ? 'taking longer than expected' : `${about(s)} left`;
  }
  return '';
}

/**
 * estimateText for a tooltip or the task view, where there is room to say
 * why there is none: familiar gives no estimate until it has seen tasks
 * succeed (a guess read as an estimate was worse than nothing). A row says
 * nothing then.
 */
export function estimateOrWhyNot(t: Task, now: number): string {
  const s = estimateText(t, now);
  if (s) return s;
  return statusLive(t.status) || t.status === 'queued' ? 'no estimate yet' : '';
}

/**
 * Where the person knows a path from, for showing it: relative to the
 * repository when inside it, else "~/…" under the home directory, else the
 * path itself (a worktree is outside the repository, under
 * $XDG_DATA_HOME/familiar/worktrees). An absolute path still longer than
 * 48 characters keeps its last three parts after "…/".
 */
export function shortPath(p: string, repo?: string, home?: string): string {
  const trim = (d: string) => d.replace(/\/+$/, '');
  if (repo && p === trim(repo)) return '.';
  if (home && p === trim(home)) return '~';
  if (repo) {
    const r = relPath(p, repo);
    if (r !== p) return r;
  }
  if (home && home !== '/') {
    const h = relPath(p, home);
    if (h !== p) return '~/' + h;
  }
  return p.length > 48 ? elided(p, 3) : p;
}

/** "…/" and the last n parts of an absolute path. */
function elided(p: string, n: number): string {
  const parts = p.split('/').filter(Boolean);
  return parts.length > n ? '…/' + parts.slice(-n).join('/') : p;
}

/** Where a title shows paths from: the task's worktree, the repository, the home directory. */
export interface PathPlaces {
  worktree?: string;
  repo?: string;
  home?: string;
}

/**
 * text (an editor tab's title) with no absolute path: paths in the worktree
 * or the repository relative to it, under home as "~/…", any other as "…/"
 * and its last two parts.
 */
export function noAbsolutePaths(text: string, where: PathPlaces): string {
  let out = text;
  for (const dir of [where.worktree, where.repo]) {
    if (!dir) continue;
    const d = dir.replace(/\/+$/, '');
    out = out.split(d + '/').join('').split(d).join('.');
  }
  if (where.home && where.home !== '/') out = out.split(where.home.replace(/\/+$/, '') + '/').join('~/');
  // Whatever absolute path is left: a word that begins with "/" and has two parts or more.
  return out.replace(/(^|[\s("'“])(\/[^\s)"'”]*\/[^\s)"'”]+)/g, (_m, pre: string, abs: string) => pre + elided(abs, 2));
}

/**
 * Markdown as the plain text it stands for, for a notification (VS Code
 * shows a notification's text as it is, "**notes.md**" with its stars):
 * emphasis and headings go, code keeps its words in quotes, a link its text
 * and its address. Stars and underscores inside words or paths (snake_case,
 * src/**) are not emphasis and stay.
 */
export function plainText(s: string): string {
  return s
    .replace(/^[ \t]*(```|~~~).*$/gm, '')
    .replace(/^[ \t]{0,3}#{1,6}[ \t]+/gm, '')
    .replace(/^[ \t]{0,3}>[ \t]?/gm, '')
    .replace(/!\[([^\]\n]*)\]\(([^)\s]+)\)/g, '$1')
    .replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (_m, t: string, u: string) => (t === u ? u : `${t} (${u})`))
    .replace(/(`+)([^`\n]+?)\1(?!`)/g, (_m, _f, code: string) => `“${code.trim()}”`)
    .replace(/(^|[^\w*\/\\])(\*\*|__)(?=\S)([^\n]*?\S)\2(?![\w*]|\.\w)/g, '$1$3')
    .replace(/(^|[^\w*\/\\])([*_])(?=[^\s*_])([^\n*_]*?[^\s*_])\2(?![\w*]|\.\w)/g, '$1$3');
}

/** p relative to dir when inside it ("notes.md" for <worktree>/notes.md), else p. */
export function relPath(p: string, dir?: string): string {
  if (!dir) return p;
  const d = dir.replace(/\/+$/, '') + '/';
  return p.startsWith(d) ? p.slice(d.length) || '.' : p;
}

/** Text known to be the start only: says so, with the whole size. */
export function clippedNote(shown: string, originalSize?: number): string {
  return `${shown}\n[clipped: ${originalSize ? `${originalSize} bytes` : 'more'} in all]`;
}

/**
 * Whether terminal input is a person's typing rather than the terminal's own
 * answer to a query in the replayed log (CSI … R, CSI ? … c, focus in/out).
 */
export function typed(data: string): boolean {
  return !/^(\x1b\[[0-9;?>]*[Rcn]|\x1b\[[IO]|\x1b\][^\x07]*(\x07|\x1b\\))+$/.test(data);
}

/**
 * The log without claude's exit hint "claude --resume <id>": familiar owns the
 * session (Continue… resumes it), and the hint invites running a second
 * claude on it by hand.
 */
export function withoutResumeHint(d: string): string {
  if (!d.includes('--resume')) return d;
  return d.replace(/[^\r\n]*claude --resume [0-9a-f-]{8,}[^\r\n]*(\r?\n)?/g, '');
}

/** The tools whose permission is about changing a file: "Review…" shows the change. */
export const editTools = ['Write', 'Edit', 'MultiEdit', 'NotebookEdit'];

/** An MCP tool's server and tool ("mcp__github__create_issue" → github, create_issue). */
export function mcpTool(tool?: string): { server: string; tool: string } | undefined {
  const m = /^mcp__(.+?)__(.+)$/.exec(tool ?? '');
  return m ? { server: m[1], tool: m[2] } : undefined;
}

/**
 * What a permission asks, in words, for a notification's first line:
 * "run Bash: npm test", "write docs/a.md", "use create_issue of the github
 * MCP server".
 */
export function permissionWhat(q: Question, worktree?: string): string {
  const detail = permissionDetail(q, worktree);
  const mcp = mcpTool(q.tool);
  if (mcp) return `use ${mcp.tool} of the ${mcp.server} MCP server`;
  switch (q.tool) {
    case 'Write': return detail ? `write ${detail}` : 'write a file';
    case 'Edit': case 'MultiEdit': case 'NotebookEdit': return detail ? `edit ${detail}` : 'edit a file';
  }
  return detail ? `run ${q.tool ?? 'a tool'}: ${truncate(detail, 160)}` : `run ${q.tool ?? truncate(q.text, 160)}`;
}

/**
 * The file as an edit proposes it, from the file as it is (current; "" for
 * a file that does not exist): Write's content, Edit's and MultiEdit's
 * replacements applied in order. undefined when the edit does not apply
 * (its old text is not in the file): the agent's tool would fail too.
 */
export function proposedText(tool: string | undefined, input: any, current: string): string | undefined {
  if (!input || typeof input !== 'object') return undefined;
  const apply = (text: string, e: any): string | undefined => {
    if (typeof e?.old_string !== 'string' || typeof e?.new_string !== 'string') return undefined;
    if (e.old_string === '') return text === '' ? e.new_string : undefined;
    if (!text.includes(e.old_string)) return undefined;
    // A function, not a string: "$&" in new_string is text, not a pattern.
    return e.replace_all ? text.split(e.old_string).join(e.new_string) : text.replace(e.old_string, () => e.new_string);
  };
  switch (tool) {
    case 'Write': return typeof input.content === 'string' ? input.content : undefined;
    case 'Edit': return apply(current, input);
    case 'MultiEdit': {
      if (!Array.isArray(input.edits)) return undefined;
      let text: string | undefined = current;
      for (const e of input.edits) if ((text = apply(text, e)) === undefined) return undefined;
      return text;
    }
  }
  return undefined;
}

/** An allow-always choice: the option, the rule it grants, and how it reads. */
export interface AlwaysChoice { id: string; rule?: string; label: string; detail: string }

/**
 * The allow-always options of a permission, broadest first, each naming the
 * rule it grants ("Edit(./docs/**)"), the narrower allow_always_exact where
 * familiar offers one.
 */
export function alwaysChoices(q: Question): AlwaysChoice[] {
  return q.options.filter((o) => o.id === 'allow_always' || o.id === 'allow_always_exact').map((o) => ({
    id: o.id,
    rule: o.rule,
    label: o.rule ? `Always allow ${o.rule}` : o.label,
    detail: o.id === 'allow_always_exact'
      ? 'Only this exactly: anything else still asks.'
      : o.rule ? `Everything ${o.rule} matches goes through unasked.` : o.label,
  }));
}

/** Where an allow-always grant holds, as a person picks it. */
export const grantScopes: { scope: 'task' | 'repository' | 'user'; label: string; detail: string }[] = [
  { scope: 'task', label: 'This task', detail: 'While this task runs, also after a restart of its session.' },
  { scope: 'repository', label: 'This repository', detail: 'Every task here: kept in .familiar/policy.yaml of the main checkout (not committed).' },
  { scope: 'user', label: 'Me, in every repository', detail: 'Kept in your familiar policy.yaml.' },
];

/** Markdown link text that stays text: an agent's words may hold brackets. */
export function linkText(s: string): string {
  return s.replace(/[\\[\]]/g, '\\$&');
}

/**
 * Which of the dirty tasks' rows to redraw at now: those whose text changed
 * since drawn (shown holds what each row showed), or 'all' when one cannot be
 * redrawn alone: gone. (A forecast is on the row itself, no rows of its
 * own: it redraws like any other text.) A dirty task never drawn
 * (paged out, under a search) has no row to redraw.
 */
export function redrawn(dirty: Iterable<string>, task: (id: string) => Task | undefined, shown: ReadonlyMap<string, string>, now: number): string[] | 'all' {
  const out: string[] = [];
  for (const id of dirty) {
    const t = task(id);
    if (!t) return 'all';
    const was = shown.get(id);
    if (was === undefined) continue;
    const key = rowKey(t, now);
    if (was === key) continue;
    out.push(id);
  }
  return out;
}

/** Everything a task's row shows (besides its place), to tell whether a redraw would change it. */
export function rowKey(t: Task, now: number): string {
  return [JSON.stringify(t.conflicts ?? []), JSON.stringify(t.overlaps ?? []), t.title, t.status, t.activity, modeNote(t) + describe(t, now, true), undoable(t, now), t.worktree?.branch ?? '', t.type, t.mode, t.attempt,
    truncate(t.description, 300), t.result?.summary ?? ''].join('\u0000');
}

/** A mode other than the usual executor, at the row's start: what the agent may do shows at a glance. */
export function modeNote(t: Task): string {
  return t.mode && t.mode !== 'executor' ? `${t.mode} · ` : '';
}

/** What a row's menu entry says when it reached its command without its row. */
export const rowLost = 'That row was being redrawn as you chose the entry, so nothing was done: open its menu again.';

/**
 * The task a tree row's menu entry (familiar.row.*) acts on: the row's own
 * element, or none. VS Code's extension host forgets every row's element
 * from a whole-tree redraw until the tree is listed again, and an entry
 * chosen meanwhile gets no row; it must not take the selected task, or the
 * one in front, instead (Merge, Discard, Undo on another task).
 */
export function rowTask(arg: unknown): string {
  const n = arg as { kind?: unknown; id?: unknown } | undefined;
  if (n && n.kind === 'task' && typeof n.id === 'string' && n.id) return n.id;
  throw new Error(rowLost);
}
