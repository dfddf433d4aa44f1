import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { grantsByScope, parseRange, rankMentions, ranges, reorderStep } from '../src/lists';
import { about, describe, estimateOrWhyNot, estimateText, groupOfTask, redrawn, rowKey, rowLost, rowTask, tasksIn, undoable, undoText } from '../src/model';
import { header } from '../src/transcript';
import type { Task } from '../src/protocol';

const base: Task = {
  id: 't1', title: 'x', description: '', acceptanceCriteria: [], type: 'implement', profile: 'default', mode: 'executor',
  priority: 0, driver: 'pty', status: 'running', activity: 'thinking', attempt: 1,
  createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z',
};
const now = Date.parse('2026-01-01T00:10:00Z');
const at = (sec: number) => new Date(now + sec * 1000).toISOString();

test('Move Up goes before the task above; Move Down moves the task below above it; nothing at the ends', () => {
  const q = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
  assert.deepEqual(reorderStep(q, 'b', -1), { id: 'b', before: 'a' });
  assert.deepEqual(reorderStep(q, 'b', 1), { id: 'c', before: 'b' });
  assert.equal(reorderStep(q, 'a', -1), undefined);
  assert.equal(reorderStep(q, 'c', 1), undefined);
  assert.equal(reorderStep(q, 'x', 1), undefined);
});

test('estimates count down to their times, in words, and say when they are past', () => {
  assert.equal(about(59), 'under a minute');
  assert.equal(about(150), 'about 3 min');
  const running = { ...base, estimatedEndAt: at(185), estimatedRemainingSec: 185 };
  assert.equal(estimateText(running, now), 'about 3 min left');
  assert.equal(estimateText(running, now + 150_000), 'under a minute left');
  assert.equal(estimateText(running, now + 200_000), 'taking longer than expected');
  const queued = { ...base, status: 'queued' as const, queuePosition: 2, estimatedStartSec: 120, estimatedStartAt: at(120) };
  assert.equal(describe(queued, now + 60_000, true), '#2 in queue · starts in about 1 min');
  assert.equal(estimateText(queued, now + 121_000), 'starts soon');
  assert.equal(describe({ ...running, startedAt: '2026-01-01T00:08:00Z' }, now, true), 'thinking · 2m · about 3 min left');
  assert.equal(estimateText({ ...base, status: 'merged', estimatedEndAt: at(60) }, now), '');
});

test('before familiar has history there is no estimate: the row says nothing, the tooltip why', () => {
  const running = { ...base, startedAt: '2026-01-01T00:08:00Z' };
  assert.equal(describe(running, now, true), 'thinking · 2m');
  assert.equal(estimateOrWhyNot(running, now), 'no estimate yet');
  const queued = { ...base, status: 'queued' as const, queuePosition: 2 };
  assert.equal(describe(queued, now, true), '#2 in queue');
  assert.equal(estimateOrWhyNot(queued, now), 'no estimate yet');
  assert.equal(estimateOrWhyNot({ ...queued, estimatedStartAt: at(120) }, now), 'starts in about 2 min');
  assert.equal(estimateOrWhyNot({ ...base, status: 'merged' }, now), '');
});

test('undo holds until undoableUntil exactly, counting down in the tree and the task view', () => {
  const merged = { ...base, status: 'merged' as const, undoableUntil: at(45), startedAt: at(-100), finishedAt: at(-40) };
  assert.equal(undoable(merged, now), true);
  assert.equal(undoable(merged, now + 45_000), false);
  // familiar leaves it out when undo does not hold: no fixed window from updatedAt.
  assert.equal(undoable({ ...merged, undoableUntil: undefined, updatedAt: at(0) }, now), false);
  // Only a merge's undo is offered.
  assert.equal(undoable({ ...merged, status: 'merging' }, now), false);
  assert.equal(undoText(merged, now), 'undo for 45s');
  // Rounded down, as the view's 4:10 reads.
  assert.equal(undoText({ ...merged, undoableUntil: at(250) }, now), 'undo for 4 min');
  assert.equal(undoText({ ...merged, undoableUntil: at(250) }, now, false), 'undo for 4:10');
  assert.equal(describe(merged, now, true), 'undo for 45s · 1m');
  assert.equal(describe(merged, now + 46_000, true), 'merged · 1m');
  const h = header(merged, now);
  assert.deepEqual(h.facts.find(([k]) => k === 'Undo'), ['Undo', 'possible for 0:45 more']);
  assert.ok(h.actions.some((a) => a.command === 'undo'));
  const later = header(merged, now + 45_000);
  assert.equal(later.facts.find(([k]) => k === 'Undo'), undefined);
  assert.ok(!later.actions.some((a) => a.command === 'undo'));
});

test('search ranges: a day, a range, open ends; a bad date says what is wrong', () => {
  const day = parseRange('2026-11-20');
  assert.ok(typeof day !== 'string');
  assert.equal(day.since, new Date(2026, 10, 20).toISOString());
  assert.equal(day.until, new Date(2026, 10, 21).toISOString());
  const open = parseRange('2026-11-01..');
  assert.ok(typeof open !== 'string' && open.since && !open.until);
  const upTo = parseRange('..2026-11-02');
  assert.ok(typeof upTo !== 'string' && !upTo.since && upTo.until === new Date(2026, 10, 3).toISOString());
  assert.match(String(parseRange('2026-02-30')), /not a date/);
  assert.match(String(parseRange('2026-11-05..2026-11-01')), /ends before/);
  assert.match(String(parseRange('last week')), /Type a date/);
  const r = ranges(new Date(2026, 10, 20, 15, 30));
  assert.deepEqual(r.map((x) => x.label), ['Any time', 'Today', 'The last 7 days', 'The last 30 days']);
  assert.equal(r[1].since, new Date(2026, 10, 20).toISOString());
  assert.equal(r[2].since, new Date(2026, 10, 14).toISOString());
});

test('grants read by scope: task, repository, user', () => {
  const g = grantsByScope([
    { rule: 'Read', scope: 'user' },
    { rule: 'Bash(touch:*)', scope: 'repository' },
    { rule: 'Edit(./docs/**)', scope: 'task', taskId: 'b' },
    { rule: 'Bash(ls:*)', scope: 'task', taskId: 'a' },
  ]);
  assert.deepEqual(g.map((x) => x.rule), ['Bash(ls:*)', 'Edit(./docs/**)', 'Bash(touch:*)', 'Read']);
});

test('a queued task paused is held in the queue, not running', () => {
  const held = { ...base, status: 'paused' as const };
  assert.equal(groupOfTask(held), 'queued');
  assert.equal(describe(held, now, true), 'held in the queue');
  const paused = { ...held, startedAt: at(-30) };
  assert.equal(groupOfTask(paused), 'running');
  assert.equal(describe(paused, now, true), 'paused · 30s');
  assert.deepEqual(tasksIn('queued', [held, { ...base, id: 'q', status: 'queued', queuePosition: 1 }]).map((t) => t.id), ['q', 't1']);
});

test('a countdown redraws only the rows whose text changed, and the whole tree only when a row cannot be redrawn alone', () => {
  const undo = { ...base, id: 'u', status: 'merged' as const, undoableUntil: at(45), startedAt: at(-100), finishedAt: at(-40) };
  const still = { ...base, id: 's', status: 'merged' as const, startedAt: at(-100), finishedAt: at(-40) };
  const tasks = new Map<string, Task>([[undo.id, undo], [still.id, still]]);
  const task = (id: string) => tasks.get(id);
  const shown = new Map([[undo.id, rowKey(undo, now)], [still.id, rowKey(still, now)]]);
  // A second later: the undo's row reads another time, the other row the same.
  assert.deepEqual(redrawn(['u', 's'], task, shown, now + 1000), ['u']);
  assert.deepEqual(redrawn(['s'], task, shown, now + 1000), []);
  // Never drawn (paged out): nothing to redraw.
  assert.deepEqual(redrawn(['u'], task, new Map(), now + 1000), []);
  // Gone: the whole tree. A forecast is the row's own text: that row alone.
  assert.equal(redrawn(['x'], task, shown, now), 'all');
  tasks.set('s', { ...still, conflicts: [{ with: 'base', files: ['a.txt'] }] });
  assert.deepEqual(redrawn(['s'], task, shown, now), ['s']);
});

test('a row menu entry acts on its row, or on nothing and says so', () => {
  assert.equal(rowTask({ kind: 'task', id: 't7' }), 't7');
  // No row (a whole-tree redraw took its element away), a group's, a
  // queue's, a bare id: never the selected task instead.
  for (const arg of [undefined, null, { kind: 'group', id: 'running' }, { kind: 'task', id: '' }, 't7', { id: 't7' }]) {
    assert.throws(() => rowTask(arg), { message: rowLost }, JSON.stringify(arg));
  }
});

test('rankMentions: names first, then paths; folders too; case does not matter', () => {
  const files = ['README.md', 'src/extension.ts', 'src/mentions.ts', 'docs/Mentions.md', 'media/mentions.js', 'test/lists.test.ts'];
  assert.deepEqual(rankMentions(files, 'ment'), ['src/mentions.ts', 'docs/Mentions.md', 'media/mentions.js']);
  assert.deepEqual(rankMentions(files, 'src'), ['src/', 'src/mentions.ts', 'src/extension.ts']);
  assert.deepEqual(rankMentions(files, 'src/m'), ['src/mentions.ts']);
  assert.deepEqual(rankMentions(files, ''), ['src/', 'docs/', 'test/', 'media/', 'README.md']);
  assert.deepEqual(rankMentions(files, 'tens'), ['src/extension.ts']);
  assert.deepEqual(rankMentions(files, 'nothing'), []);
  assert.equal(rankMentions(files, 's', 2).length, 2);
});
