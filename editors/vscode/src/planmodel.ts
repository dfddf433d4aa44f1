// A plan's words (issue 39): what the tree, the plan view and the
// notifications say of a plan and its steps. Pure, so tested without VS Code.

import type { Plan, PlanStep, PlanStepSpec, PlanTotals } from './protocol';
import { plural, truncate } from './model';

/** A plan as a tree row or a tab names it. */
export function planLabel(p: Plan): string {
  const goal = (p.goal ?? '').split('\n')[0].trim();
  return goal ? `Plan: ${truncate(goal, 60)}` : `Plan of ${plural(p.steps.length, 'step')}`;
}

/** Where the plan is, in words. */
export function planStateWords(p: Plan): string {
  switch (p.state) {
    case 'drafting': return 'an architect is writing the steps';
    case 'draft': return p.problems?.length ? `draft: ${plural(p.problems.length, 'problem')} to fix` : 'draft: review the steps, then Run';
    case 'running': return `running: ${progress(p)}`;
    case 'held': return 'held: a step needs you';
    case 'done': return `done: ${progress(p)}`;
    case 'cancelled': return 'cancelled';
    case 'undone': return 'undone: its merges were taken back';
    case 'failed': return 'no plan came of the goal';
  }
  return p.state;
}

/** "2 of 5 steps merged". */
function progress(p: Plan): string {
  const merged = p.steps.filter((s) => s.state === 'merged' || s.state === 'done' || s.state === 'skipped').length;
  return `${merged} of ${plural(p.steps.length, 'step')} merged`;
}

/** Where a step is, in words. */
export function stepStateWords(s: PlanStep): string {
  switch (s.state) {
    case 'pending': return s.needs.length ? 'waits for what it needs' : 'about to start';
    case 'running': return s.why && s.why !== 'queued' ? s.why : 'at work';
    case 'ready': return 'ready to merge';
    case 'merging': return 'in the merge queue';
    case 'merged': return 'merged';
    case 'done': return 'done, nothing to merge';
    case 'failed': return 'failed';
    case 'held': return 'held';
    case 'skipped': return 'skipped';
    case 'cancelled': return 'cancelled';
    case 'undone': return 'undone';
  }
  return s.state;
}

/** A step's row: its state and, when it waits, failed or is held, why. */
export function stepLine(s: PlanStep): string {
  if (s.state === 'pending' && s.why && s.why !== 'starting') return s.why;
  const w = stepStateWords(s);
  return s.why && ['failed', 'held'].includes(s.state) ? `${w}: ${s.why}` : w;
}

/** Whether the plan's steps may still be edited (plan/update). */
export function editable(p: Plan): boolean {
  return p.state === 'draft' || p.state === 'running' || p.state === 'held';
}

/** Whether a step's own spec may still change: not once its work is under way or done. */
export function stepEditable(s: PlanStep): boolean {
  return !['running', 'ready', 'merging', 'merged', 'done', 'undone'].includes(s.state);
}

/**
 * The steps by level: level 0 needs nothing, level k needs a step of level
 * k-1 at most. A step in a circle (a draft can have one) is left out.
 */
export function levels(steps: PlanStepSpec[]): string[][] {
  const level = new Map<string, number>();
  const ids = new Set(steps.map((s) => s.id));
  for (let round = 0; round <= steps.length; round++) {
    for (const s of steps) {
      if (level.has(s.id)) continue;
      const needs = s.needs.filter((n) => ids.has(n));
      if (needs.every((n) => level.has(n))) level.set(s.id, needs.length ? Math.max(...needs.map((n) => level.get(n)!)) + 1 : 0);
    }
  }
  const out: string[][] = [];
  for (const s of steps) {
    const l = level.get(s.id);
    if (l === undefined) continue;
    (out[l] ??= []).push(s.id);
  }
  return out.filter(Boolean);
}

/** "a, b → c, d → e": the plan as a small graph on one line. */
export function graphLine(steps: PlanStepSpec[]): string {
  return levels(steps).map((l) => l.join(', ')).join(' → ');
}

/** A duration in words: "850 ms", "14 s", "3 min 5 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
}

/** The plan's cost line: wall time, agents' time, tokens, dollars. */
export function totalsText(t: PlanTotals): string {
  const parts: string[] = [];
  if (t.wallMs > 0) parts.push(`${duration(t.wallMs)} from Run to the end`);
  if (t.workMs > 0) parts.push(`${duration(t.workMs)} of agents' work`);
  if (t.tokens > 0) parts.push(plural(t.tokens, 'token'));
  if (t.costUsd > 0) parts.push(`$${t.costUsd.toFixed(t.costUsd < 0.1 ? 4 : 2)}`);
  return parts.join(' · ');
}

/** Steps as plan/update takes them: their specs, no states. */
export function specs(steps: PlanStep[]): PlanStepSpec[] {
  return steps.map((s) => ({
    id: s.id, title: s.title, description: s.description, needs: [...s.needs],
    ...(s.acceptanceCriteria?.length ? { acceptanceCriteria: [...s.acceptanceCriteria] } : {}),
    ...(s.files?.length ? { files: [...s.files] } : {}),
    ...(s.mode ? { mode: s.mode } : {}),
    ...(s.profile ? { profile: s.profile } : {}),
  }));
}
