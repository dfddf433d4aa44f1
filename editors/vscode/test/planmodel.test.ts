import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { duration, editable, graphLine, levels, planLabel, planStateWords, specs, stepEditable, stepLine, totalsText } from '../src/planmodel';
import type { Plan, PlanStep } from '../src/protocol';

const step = (id: string, needs: string[] = [], state: PlanStep['state'] = 'pending', why?: string): PlanStep =>
  ({ id, title: `Step ${id}`, description: `do ${id}`, needs, state, ...(why ? { why } : {}) });
const plan = (over: Partial<Plan> = {}): Plan => ({
  id: 'p1', goal: 'Add OAuth login: backend, UI, migration, docs, tests\nmore lines', state: 'running', baseRef: 'main',
  steps: [step('a', [], 'merged'), step('b', [], 'running'), step('c', ['a']), step('d', ['a', 'b']), step('e', ['c', 'd'])],
  totals: { wallMs: 0, workMs: 0, tokens: 0, costUsd: 0 }, createdAt: '2026-11-28T00:00:00Z', updatedAt: '2026-11-28T00:00:00Z', ...over,
});

test('a plan is named by its goal, cut, or by its size', () => {
  assert.equal(planLabel(plan()), 'Plan: Add OAuth login: backend, UI, migration, docs, tests');
  assert.equal(planLabel(plan({ goal: undefined })), 'Plan of 5 steps');
  assert.ok(planLabel(plan({ goal: 'x'.repeat(200) })).length <= 67);
});

test('a plan and its steps are said in words, with why when it matters', () => {
  assert.equal(planStateWords(plan()), 'running: 1 of 5 steps merged');
  assert.equal(planStateWords(plan({ state: 'draft', problems: [{ index: 1, field: 'needs', message: 'x' }] })), 'draft: 1 problem to fix');
  assert.equal(planStateWords(plan({ state: 'draft' })), 'draft: review the steps, then Run');
  assert.equal(planStateWords(plan({ state: 'drafting' })), 'an architect is writing the steps');
  assert.equal(stepLine(step('d', ['b'], 'held', 'it needs "b" failed')), 'held: it needs "b" failed');
  assert.equal(stepLine(step('c', ['a'], 'pending', 'waits for "a" to merge')), 'waits for "a" to merge');
  assert.equal(stepLine(step('a', [], 'merging')), 'in the merge queue');
  assert.equal(stepLine(step('a', [], 'running', 'queued')), 'at work');
  assert.equal(stepLine(step('a', [], 'running', 'waiting for an answer')), 'waiting for an answer');
});

test('the graph by levels, a circle left out', () => {
  const p = plan();
  assert.deepEqual(levels(p.steps), [['a', 'b'], ['c', 'd'], ['e']]);
  assert.equal(graphLine(p.steps), 'a, b → c, d → e');
  assert.equal(graphLine([step('x', ['y']), step('y', ['x']), step('z')]), 'z');
  assert.equal(graphLine([step('x', ['nope'])]), 'x');
});

test('what may still be edited', () => {
  assert.ok(editable(plan({ state: 'draft' })) && editable(plan({ state: 'held' })) && !editable(plan({ state: 'done' })));
  assert.ok(stepEditable(step('a', [], 'failed')) && !stepEditable(step('a', [], 'merged')) && !stepEditable(step('a', [], 'running')));
});

test('times, tokens and cost in words', () => {
  assert.equal(duration(850), '850 ms');
  assert.equal(duration(14_400), '14 s');
  assert.equal(duration(185_000), '3 min 5 s');
  assert.equal(duration(120_000), '2 min');
  assert.equal(totalsText({ wallMs: 14_500, workMs: 24_100, tokens: 720, costUsd: 0.006 }), '15 s from Run to the end · 24 s of agents\' work · 720 tokens · $0.0060');
  assert.equal(totalsText({ wallMs: 0, workMs: 0, tokens: 1, costUsd: 0 }), '1 token');
});

test('steps as plan/update takes them: no states', () => {
  const s = specs([{ ...step('a', [], 'failed', 'why'), taskId: 't1', files: ['a.go'], mode: 'executor' }]);
  assert.deepEqual(s, [{ id: 'a', title: 'Step a', description: 'do a', needs: [], files: ['a.go'], mode: 'executor' }]);
});
