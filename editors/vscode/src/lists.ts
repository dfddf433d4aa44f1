// Pure parts of the queue, history, grant and mention controls (queue.ts,
// history.ts, grants.ts, mentions.ts), without VS Code, for the fast tests.

import type { Grant, GrantScope, Task } from './protocol';

/**
 * The task/reorder that moves id one place up (-1) or down (+1) in the queue
 * as shown, or undefined at an end. Down is the task below moved above it:
 * "before" names a task to go in front of, and the last place has none.
 */
export function reorderStep(queue: Pick<Task, 'id'>[], id: string, by: -1 | 1): { id: string; before: string } | undefined {
  const i = queue.findIndex((t) => t.id === id);
  if (i < 0) return undefined;
  if (by < 0) return i > 0 ? { id, before: queue[i - 1].id } : undefined;
  return i < queue.length - 1 ? { id: queue[i + 1].id, before: id } : undefined;
}

/** The date ranges a search offers; custom asks for dates. */
export interface Range { label: string; since?: string; until?: string }

/** The ranges offered, from now: any time, today, the last 7 and 30 days. */
export function ranges(now: Date): Range[] {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const daysAgo = (n: number) => new Date(midnight.getTime() - n * 86400000).toISOString();
  return [
    { label: 'Any time' },
    { label: 'Today', since: midnight.toISOString() },
    { label: 'The last 7 days', since: daysAgo(6) },
    { label: 'The last 30 days', since: daysAgo(29) },
  ];
}

/**
 * A typed date range "2026-11-01..2026-11-20" (either end may be left out;
 * one date alone is that day), in local days, as task/list's since/until;
 * a string saying what is wrong otherwise.
 */
export function parseRange(s: string): Range | string {
  const m = /^\s*(\d{4}-\d{2}-\d{2})?\s*(?:(\.\.)\s*(\d{4}-\d{2}-\d{2})?)?\s*$/.exec(s);
  if (!m || (!m[1] && !m[3])) return 'Type a date (2026-11-20) or a range (2026-11-01..2026-11-20; either end may be left out).';
  const day = (d: string) => {
    const [y, mo, da] = d.split('-').map(Number);
    const t = new Date(y, mo - 1, da);
    return t.getFullYear() === y && t.getMonth() === mo - 1 && t.getDate() === da ? t : undefined;
  };
  const from = m[1] ? day(m[1]) : undefined;
  const toDay = m[2] ? (m[3] ? day(m[3]) : undefined) : from;
  if ((m[1] && !from) || (m[3] && !toDay)) return 'That is not a date: write it as 2026-11-20.';
  const to = toDay ? new Date(toDay.getTime() + 86400000) : undefined;
  if (from && to && to <= from) return 'The range ends before it starts.';
  return { label: s.trim(), since: from?.toISOString(), until: to?.toISOString() };
}

/** The grants in the order a person reads them: by scope (task, repository, user), then rule. */
export function grantsByScope(grants: Grant[]): Grant[] {
  const order: GrantScope[] = ['task', 'repository', 'user'];
  return [...grants].sort((a, b) => order.indexOf(a.scope) - order.indexOf(b.scope) || (a.taskId ?? '').localeCompare(b.taskId ?? '') || a.rule.localeCompare(b.rule));
}

/**
 * The mentions of query among files (workspace-relative paths), folders
 * (with a trailing "/") included: a name starting with it first, then a
 * path starting with it, a name holding it, a path holding it; shorter
 * first within each. Case does not matter. An empty query offers the top
 * folders and files.
 */
export function rankMentions(files: string[], query: string, limit = 12): string[] {
  const q = query.toLowerCase().replace(/^\.\//, '');
  const all = new Set<string>();
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i < parts.length; i++) all.add(parts.slice(0, i).join('/') + '/');
    all.add(f);
  }
  const scored: [number, string][] = [];
  for (const p of all) {
    const lower = p.toLowerCase();
    const name = lower.replace(/\/$/, '').split('/').pop()!;
    let score: number;
    if (q === '') score = p.replace(/\/$/, '').includes('/') ? -1 : 0;
    else if (name.startsWith(q)) score = 0;
    else if (lower.startsWith(q)) score = 1;
    else if (name.includes(q)) score = 2;
    else if (lower.includes(q)) score = 3;
    else score = -1;
    if (score >= 0) scored.push([score, p]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1].length - b[1].length || a[1].localeCompare(b[1]));
  return scored.slice(0, limit).map(([, p]) => p);
}
