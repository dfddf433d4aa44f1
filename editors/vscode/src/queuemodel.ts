// Pure helpers of the merge queue's face and the conflict forecast (issue
// 25): what the tree, the task view and the notifications say. No VS Code
// dependency, so the fast tests cover them.

import type { Queue, QueueItem, Task, TaskConflict } from './protocol';
import { plural, truncate } from './model';

/** Looks a task's title up by id (undefined: not known to this window). */
export type TitleOf = (id: string) => string | undefined;

/** "“A”", "“A” and “B”", "“A”, “B” and “C”": titles as a person reads a list. */
export function andList(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function quoted(title: string): string {
  return `“${truncate(title, 60)}”`;
}

/** Who a forecast entry is with: the base branch by name, another task by its title. */
export function conflictWith(c: TaskConflict, t: Pick<Task, 'worktree'>, titleOf: TitleOf): string {
  if (c.with === 'base') return t.worktree?.baseRef || 'the base branch';
  const title = titleOf(c.with);
  return title ? quoted(title) : 'another task';
}

/** "a.go", "a.go and b.go", "a.go, b.go and 3 more files". */
export function fileList(files: string[], shown = 2): string {
  if (files.length <= shown + 1) return andList(files);
  return `${files.slice(0, shown).join(', ')} and ${plural(files.length - shown, 'more file')}`;
}

/**
 * The tree row's word on the forecast, before the rest of its description:
 * "conflicts with “B” in a.go", with the base "conflicts with main in a.go";
 * several: the first and how many more. Overlaps, the softer signal, only
 * when nothing conflicts: "overlaps “B” in a.go". "" when neither.
 */
export function forecastText(t: Pick<Task, 'conflicts' | 'overlaps' | 'worktree'>, titleOf: TitleOf): string {
  const say = (verb: string, list: TaskConflict[]) => {
    const first = list[0];
    const more = list.length > 1 ? ` (+${plural(list.length - 1, 'other')})` : '';
    return `${verb} ${conflictWith(first, t, titleOf)} in ${fileList(first.files, 1)}${more}`;
  };
  if (t.conflicts?.length) return say('conflicts with', t.conflicts);
  if (t.overlaps?.length) return say('overlaps', t.overlaps);
  return '';
}

/**
 * The forecast summed up at the start of a task's row, short enough for a
 * side bar: "conflicts with “B”", "conflicts with 2 tasks", "conflicts with
 * main and 1 task"; overlaps only when nothing conflicts. The tooltip and
 * the task view list each entry with its files (forecastLines, forecastFacts).
 */
export function forecastSummary(t: Pick<Task, 'conflicts' | 'overlaps' | 'worktree'>, titleOf: TitleOf): string {
  const say = (verb: string, list: TaskConflict[]) => {
    if (list.length === 1) return `${verb} ${conflictWith(list[0], t, titleOf)}`;
    const tasks = list.filter((c) => c.with !== 'base').length;
    const base = list.some((c) => c.with === 'base') ? conflictWith({ with: 'base', files: [] }, t, titleOf) : '';
    return `${verb} ${andList([base, tasks ? plural(tasks, 'task') : ''].filter(Boolean))}`;
  };
  if (t.conflicts?.length) return say('conflicts with', t.conflicts);
  if (t.overlaps?.length) return say('overlaps', t.overlaps);
  return '';
}

/**
 * Every forecast entry, one line each, for the tooltip and the task view:
 * "Conflicts with “B” in a.go and b.go" / "Overlaps main in c.go" (files git
 * could not merge, then files both changed that still merge cleanly).
 */
export function forecastLines(t: Pick<Task, 'conflicts' | 'overlaps' | 'worktree'>, titleOf: TitleOf): string[] {
  const lines: string[] = [];
  for (const c of t.conflicts ?? []) lines.push(`Conflicts with ${conflictWith(c, t, titleOf)} in ${fileList(c.files, 8)}`);
  for (const c of t.overlaps ?? []) lines.push(`Overlaps ${conflictWith(c, t, titleOf)} in ${fileList(c.files, 8)} (merges cleanly)`);
  return lines;
}

/**
 * The forecast as the task view's facts: ["Conflicts", "with “B” in a.go"],
 * ["Overlaps", "with main in b.go (merges cleanly)"], one per entry.
 */
export function forecastFacts(t: Pick<Task, 'conflicts' | 'overlaps' | 'worktree'>, titleOf: TitleOf): [string, string][] {
  const facts: [string, string][] = [];
  for (const c of t.conflicts ?? []) facts.push(['Conflicts', `with ${conflictWith(c, t, titleOf)} in ${fileList(c.files, 8)}`]);
  for (const c of t.overlaps ?? []) facts.push(['Overlaps', `with ${conflictWith(c, t, titleOf)} in ${fileList(c.files, 8)} (merges cleanly)`]);
  return facts;
}

/** Why a hand-back or a set-aside happened, in words. */
export function queueReason(reason: string | undefined, files: string[] | undefined, baseRef: string): string {
  switch (reason) {
    case 'conflict': return files?.length ? `conflicts with ${baseRef} in ${fileList(files)}` : `conflicts with ${baseRef}`;
    case 'verify': return 'the verify command failed';
    case 'error': return 'familiar could not merge it';
    default: return reason ? reason : 'it could not be merged';
  }
}

/** Where one task is in the queue, in words (the tree row under "Merge queue"). */
export function queueItemText(it: QueueItem, baseRef: string): string {
  switch (it.state) {
    case 'waiting': return it.attempts > 0 ? 'waiting to try again' : 'waiting';
    case 'updating': return `building its merge with ${baseRef}`;
    case 'verifying': return 'verifying';
    case 'merging': return 'merging';
    case 'merged': return 'merged';
    case 'handedBack': return `handed back to its agent: ${queueReason(it.reason, it.files, baseRef)}`;
    // An unresolved conflict or leftover markers: the detail names the files and lines.
    case 'blocked': return it.reason === 'conflict' && it.detail ? `set aside: ${truncate(it.detail, 120)}` : `set aside: ${queueReason(it.reason, it.files, baseRef)}`;
    case 'cancelled': return it.detail ? `not merged: ${truncate(it.detail, 80)}` : 'not merged (the queue stopped)';
    case 'undone': return 'merge undone';
    default: return it.state;
  }
}

/** The queue's own state in words, for its group row. */
export function queueStateText(q: Queue): string {
  const merged = q.items.filter((i) => i.state === 'merged').length;
  const of = `${merged} of ${q.items.length} merged`;
  switch (q.state) {
    case 'running': return `running · ${of}`;
    case 'done': return `finished · ${of}`;
    case 'cancelled': return `cancelled · ${of}`;
    case 'undone': return 'undone';
    default: return q.state;
  }
}

export type QueueAction = 'Undo Queue' | 'Show Log';

/** What the notification at a queue's end says. */
export interface QueueNotice { level: 'info' | 'warning'; text: string; actions: QueueAction[] }

/**
 * The one notification at a queue's end: what merged, what went back to an
 * agent on the way and why, what was set aside and why, what was not
 * reached; titles quoted, plurals right, no Markdown, no paths but the
 * repository's own.
 */
export function queueEndNotice(q: Queue): QueueNotice {
  const base = q.baseRef || 'the base branch';
  const merged = q.items.filter((i) => i.state === 'merged');
  const aside = q.items.filter((i) => i.state === 'blocked');
  const left = q.items.filter((i) => i.state !== 'merged' && i.state !== 'blocked' && i.state !== 'undone');
  const back = q.items.filter((i) => (i.handBacks?.length ?? 0) > 0 || (i.attempts > 1 && i.state === 'merged'));
  const parts: string[] = [];
  const head = q.state === 'cancelled' ? 'Familiar: the merge queue was cancelled.' : 'Familiar: the merge queue finished.';
  parts.push(head);
  if (merged.length) parts.push(`Merged into ${base}: ${andList(merged.map((i) => quoted(i.title)))}.`);
  else parts.push(`Nothing was merged into ${base}.`);
  if (back.length) {
    const why = back.map((i) => {
      const hb = i.handBacks ?? [];
      const reasons = [...new Set(hb.map((h) => queueReason(h.reason, h.files, base)))];
      return reasons.length ? `${quoted(i.title)} (${reasons.join('; ')})` : quoted(i.title);
    });
    parts.push(`Went back to ${back.length === 1 ? 'its agent' : 'their agents'} first: ${andList(why)}.`);
  }
  if (aside.length) {
    parts.push(`Set aside, blocked: ${andList(aside.map((i) => `${quoted(i.title)} (${queueReason(i.reason, i.files, base)})`))}.`);
  }
  if (left.length) {
    const why = left.map((i) => i.state === 'handedBack' ? `${quoted(i.title)} (still with its agent)` : quoted(i.title));
    parts.push(`Not merged: ${andList(why)}.`);
  }
  const actions: QueueAction[] = merged.length ? ['Undo Queue'] : [];
  return { level: aside.length || left.length || !merged.length ? 'warning' : 'info', text: parts.join(' '), actions };
}

/**
 * A queue error as a person reads it: the checkout's absolute path (the
 * dirty-base refusal names it) becomes the folder's name, and the
 * protocol's method names become the commands that do it.
 */
export function plainQueueError(message: string, root?: string): string {
  // familiar's context ("merge queue: …") repeats what the notification says.
  let m = message.replace(/^merge queue: /, '');
  if (root) {
    const r = root.replace(/\/+$/, '');
    const name = r.split('/').pop() || r;
    m = m.split(` at ${r} `).join(` in ${name} `).split(r + '/').join('').split(r).join(name);
  }
  m = m.replace(/queue\/cancel/g, 'Cancel Queue').replace(/queue\/undo/g, 'Undo Queue').replace(/queue\/merge/g, 'Merge All Ready');
  return /[.!?]$/.test(m) ? m : m + '.';
}

/**
 * The ready tasks in the order queue/merge takes them by default (the
 * server's: highest priority first, then oldest): the ones with something
 * to merge.
 */
export function readyInQueueOrder(tasks: Iterable<Task>): Task[] {
  return [...tasks]
    .filter((t) => t.status === 'merging' && !t.result?.noChanges && !t.archivedAt)
    .sort((a, b) => (b.priority - a.priority) || (Date.parse(a.createdAt) - Date.parse(b.createdAt)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
