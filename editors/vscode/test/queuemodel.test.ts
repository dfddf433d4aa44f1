import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { andList, fileList, forecastFacts, forecastLines, forecastSummary, forecastText, plainQueueError, queueEndNotice, queueItemText, readyInQueueOrder } from '../src/queuemodel';
import type { Queue, QueueItem, Task } from '../src/protocol';

const base: Task = {
  id: 't1', title: 'x', description: '', acceptanceCriteria: [], type: 'implement', profile: 'default', mode: 'executor',
  priority: 0, driver: 'pty', status: 'merging', activity: 'idle', attempt: 1,
  createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z',
  worktree: { path: '/tmp/wt/t1', branch: 'familiar/t1', baseRef: 'main', baseCommit: 'abc' },
};
const titles: Record<string, string> = { t2: 'Edit the greeting', t3: 'Add c.txt' };
const titleOf = (id: string) => titles[id];

test('lists read as a person writes them', () => {
  assert.equal(andList([]), '');
  assert.equal(andList(['a']), 'a');
  assert.equal(andList(['a', 'b']), 'a and b');
  assert.equal(andList(['a', 'b', 'c']), 'a, b and c');
  assert.equal(fileList(['a.go', 'b.go', 'c.go']), 'a.go, b.go and c.go');
  assert.equal(fileList(['a.go', 'b.go', 'c.go', 'd.go']), 'a.go, b.go and 2 more files');
  assert.equal(fileList(['a.go', 'b.go', 'c.go'], 1), 'a.go and 2 more files');
  assert.equal(fileList(['a.go', 'b.go'], 1), 'a.go and b.go');
});

test('the forecast names the other task by title and the base by name, with relative files', () => {
  const t: Task = { ...base, conflicts: [{ with: 't2', files: ['shared.txt'] }], overlaps: [{ with: 'base', files: ['README.md'] }] };
  assert.equal(forecastText(t, titleOf), 'conflicts with “Edit the greeting” in shared.txt');
  assert.equal(forecastText({ ...base, conflicts: [{ with: 'base', files: ['a.go'] }, { with: 't3', files: ['a.go'] }] }, titleOf),
    'conflicts with main in a.go (+1 other)');
  assert.equal(forecastText({ ...base, overlaps: [{ with: 't9', files: ['a.go', 'b.go', 'c.go'] }] }, titleOf), 'overlaps another task in a.go and 2 more files');
  assert.equal(forecastText(base, titleOf), '');
  // Summed up on the row (issue 36): no rows of its own under each task.
  assert.equal(forecastSummary(t, titleOf), 'conflicts with “Edit the greeting”');
  assert.equal(forecastSummary({ ...base, conflicts: [{ with: 't2', files: ['a'] }, { with: 't3', files: ['a'] }] }, titleOf), 'conflicts with 2 tasks');
  assert.equal(forecastSummary({ ...base, conflicts: [{ with: 'base', files: ['a'] }, { with: 't3', files: ['a'] }] }, titleOf), 'conflicts with main and 1 task');
  assert.equal(forecastSummary({ ...base, overlaps: [{ with: 't9', files: ['a'] }] }, titleOf), 'overlaps another task');
  assert.equal(forecastSummary(base, titleOf), '');
  assert.deepEqual(forecastLines(t, titleOf), [
    'Conflicts with “Edit the greeting” in shared.txt',
    'Overlaps main in README.md (merges cleanly)',
  ]);
  assert.deepEqual(forecastFacts(t, titleOf), [
    ['Conflicts', 'with “Edit the greeting” in shared.txt'],
    ['Overlaps', 'with main in README.md (merges cleanly)'],
  ]);
});

const item = (title: string, state: string, more: Partial<QueueItem> = {}): QueueItem => ({ taskId: title, title, state, attempts: 1, ...more });

test('each step of a queue item in words', () => {
  assert.equal(queueItemText(item('A', 'waiting', { attempts: 0 }), 'main'), 'waiting');
  assert.equal(queueItemText(item('A', 'waiting', { attempts: 1 }), 'main'), 'waiting to try again');
  assert.equal(queueItemText(item('A', 'updating'), 'main'), 'building its merge with main');
  assert.equal(queueItemText(item('A', 'verifying'), 'main'), 'verifying');
  assert.equal(queueItemText(item('A', 'merged'), 'main'), 'merged');
  assert.equal(queueItemText(item('A', 'handedBack', { reason: 'conflict', files: ['shared.txt'] }), 'main'), 'handed back to its agent: conflicts with main in shared.txt');
  assert.equal(queueItemText(item('A', 'handedBack', { reason: 'verify' }), 'main'), 'handed back to its agent: the verify command failed');
  assert.equal(queueItemText(item('A', 'blocked', { reason: 'verify' }), 'main'), 'set aside: the verify command failed');
  assert.equal(queueItemText(item('B', 'blocked', { reason: 'conflict', files: ['flag.go'], detail: 'its conflict with main is not resolved: flag.go (conflict markers at lines 3, 5, 7)' }), 'main'), 'set aside: its conflict with main is not resolved: flag.go (conflict markers at lines 3, 5, 7)');
  assert.equal(queueItemText(item('A', 'cancelled'), 'main'), 'not merged (the queue stopped)');
});

const queue = (items: QueueItem[], state = 'done'): Queue => ({ id: 'q1', state, strategy: 'merge', baseRef: 'main', startedAt: '2026-01-01T00:00:00Z', endedAt: '2026-01-01T00:05:00Z', items });

test('the end notification says what merged, what went back and why, what was set aside', () => {
  const all = queueEndNotice(queue([
    item('A', 'merged'),
    item('B', 'merged', { attempts: 2, handBacks: [{ reason: 'conflict', files: ['shared.txt'] }] }),
    item('C', 'merged', { attempts: 2, handBacks: [{ reason: 'verify', detail: 'the verify command `make test` exited with 1' }] }),
  ]));
  assert.equal(all.level, 'info');
  assert.equal(all.text, 'Familiar: the merge queue finished. Merged into main: “A”, “B” and “C”. Went back to their agents first: “B” (conflicts with main in shared.txt) and “C” (the verify command failed).');
  assert.deepEqual(all.actions, ['Undo Queue']);

  const mixed = queueEndNotice(queue([
    item('A', 'merged'),
    item('B', 'blocked', { attempts: 2, reason: 'verify', handBacks: [{ reason: 'verify' }] }),
  ]));
  assert.equal(mixed.level, 'warning');
  assert.equal(mixed.text, 'Familiar: the merge queue finished. Merged into main: “A”. Went back to its agent first: “B” (the verify command failed). Set aside, blocked: “B” (the verify command failed).');

  const none = queueEndNotice(queue([item('A', 'cancelled', { attempts: 0 }), item('B', 'handedBack', { reason: 'conflict', files: ['x'], handBacks: [{ reason: 'conflict', files: ['x'] }] })], 'cancelled'));
  assert.equal(none.text, 'Familiar: the merge queue was cancelled. Nothing was merged into main. Went back to its agent first: “B” (conflicts with main in x). Not merged: “A” and “B” (still with its agent).');
  assert.deepEqual(none.actions, []);
  for (const n of [all, mixed, none]) {
    assert.doesNotMatch(n.text, /\(s\)|\*\*|`|\/tmp\//);
  }
});

test('queue errors are plain: no absolute path, commands by their names', () => {
  assert.equal(plainQueueError('merge queue: the checkout of the base branch at /home/me/repo has uncommitted changes (wip.txt); commit or stash them first', '/home/me/repo'),
    'the checkout of the base branch in repo has uncommitted changes (wip.txt); commit or stash them first.');
  assert.equal(plainQueueError('see /home/me/repo/x.txt and /home/me/repo', '/home/me/repo'), 'see x.txt and repo.');
  assert.equal(plainQueueError('a merge queue is running; queue/cancel stops it'), 'a merge queue is running; Cancel Queue stops it.');
});

test('ready tasks in the queue order: priority, then oldest; nothing to merge left out', () => {
  const tasks = [
    { ...base, id: 'old', priority: 0, createdAt: '2026-01-01T00:00:00Z' },
    { ...base, id: 'high', priority: 5, createdAt: '2026-01-02T00:00:00Z' },
    { ...base, id: 'new', priority: 0, createdAt: '2026-01-03T00:00:00Z' },
    { ...base, id: 'none', result: { success: true, summary: '', changedFiles: [], commits: [], noChanges: true } },
    { ...base, id: 'running', status: 'running' },
  ] as Task[];
  assert.deepEqual(readyInQueueOrder(tasks).map((t) => t.id), ['high', 'old', 'new']);
});
