import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { activityText, compareTime, counts, describe, duration, groupOf, isMultiSelect, noLinks, roughly, tasksIn } from '../src/model';
import type { Task } from '../src/protocol';

const base: Task = {
  id: 't1', title: 'x', description: '', acceptanceCriteria: [], type: 'implement', profile: 'default', mode: 'executor',
  priority: 0, driver: 'pty', status: 'running', activity: 'thinking', attempt: 1,
  createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z',
};

test('groups by state', () => {
  assert.equal(groupOf('waiting'), 'waiting');
  assert.equal(groupOf('starting'), 'running');
  assert.equal(groupOf('merging'), 'ready');
  assert.equal(groupOf('merged'), 'done');
  const tasks = [
    { ...base, id: 'a', status: 'queued', queuePosition: 1 },
    { ...base, id: 'b', status: 'queued', queuePosition: 0 },
    { ...base, id: 'c', status: 'waiting' },
  ] as Task[];
  assert.deepEqual(tasksIn('queued', tasks).map((t) => t.id), ['b', 'a']);
  assert.deepEqual(counts(tasks), { running: 0, waiting: 1, queued: 2, ready: 0 });
});

test('describes activity, elapsed, queue position, ETA, cost and countdown', () => {
  const now = Date.parse('2026-01-01T00:01:15Z');
  assert.equal(describe({ ...base, activity: 'running_command', startedAt: '2026-01-01T00:00:00Z' }, now), 'running a command · 1m 15s');
  assert.equal(describe({ ...base, status: 'queued', queuePosition: 0, estimatedStartSec: 90 }, now), '#1 in queue · starts in ~1m 30s');
  assert.equal(describe({
    ...base, status: 'merging', startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:30Z',
    result: { success: true, summary: '', changedFiles: [{ path: 'a', status: 'added' }], commits: [], costUsd: 0.123 },
  }, now), '1 file(s) changed · 30s · $0.12');
  assert.equal(describe({
    ...base, status: 'waiting',
    pendingQuestion: { id: 'q', kind: 'permission', text: '', tool: 'Bash', input: { command: 'ls' }, options: [], allowText: false, expiresAt: '2026-01-01T00:02:00Z' },
  }, now), 'asks to use Bash: ls · 0:45 left');
  assert.equal(duration(3700), '1h 1m');
  assert.equal(describe({ ...base, activity: 'running_command', startedAt: '2026-01-01T00:00:00Z' }, now, true), 'running a command · 1m');
});

test('compares nanosecond times exactly', () => {
  assert.ok(compareTime('2026-01-01T00:00:05.1Z', '2026-01-01T00:00:05.12Z') < 0);
  assert.ok(compareTime('2026-01-01T00:00:05.123456789Z', '2026-01-01T00:00:05.123456788Z') > 0);
  assert.equal(compareTime('2026-01-01T00:00:05Z', '2026-01-01T00:00:05.0Z'), 0);
});

test('multi-select comes from the question or its AskUserQuestion input', () => {
  const q = { id: 'q', kind: 'choice' as const, text: 'Which?', options: [], allowText: true };
  assert.equal(isMultiSelect(q), false);
  assert.equal(isMultiSelect({ ...q, multiSelect: true }), true);
  assert.equal(isMultiSelect({ ...q, input: { questions: [{ question: 'Which?', multiSelect: true }] } }), true);
});

test('task/output frames are decoded without parsing their data', async () => {
  const { outputSkippingDecoder } = await import('../src/client');
  const out = Buffer.from('{"jsonrpc":"2.0","method":"task/output","params":{"data":"' + 'x\\",\\"id\\":\\"fake'.repeat(100) + '","id":"t1","seq":42}}');
  assert.deepEqual(await outputSkippingDecoder.decode(out, { charset: 'utf-8' }), { jsonrpc: '2.0', method: 'task/output', params: { seq: 42, id: 't1', data: '' } });
  const other = Buffer.from('{"jsonrpc":"2.0","method":"task/updated","params":{"seq":43,"task":{"id":"t1"}}}');
  assert.equal((await outputSkippingDecoder.decode(other, { charset: 'utf-8' })).params.seq, 43);
});

test('activity in words, nothing while unknown', () => {
  assert.equal(activityText('running_command'), 'running a command');
  assert.equal(activityText('unknown'), '');
  assert.equal(activityText('something new'), '');
});

test('a notification counts down by the minute, rounding down', () => {
  assert.equal(roughly(300), '5 min');
  assert.equal(roughly(299), '4 min');
  assert.equal(roughly(60), '1 min');
  assert.equal(roughly(59), 'under a minute');
  assert.equal(roughly(0), 'under a minute');
});

test('text from agents never becomes a link in a notification', () => {
  const cmd = "echo '[Allow](command:workbench.action.terminal.sendSequence?%7B%7D)'";
  const shown = noLinks(cmd);
  assert.doesNotMatch(shown, /\]\(/);
  assert.equal(shown.replace(/\u200b/g, ''), cmd);
  assert.equal(noLinks('no links here (none)'), 'no links here (none)');
});
