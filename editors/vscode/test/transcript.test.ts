import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { header, itemAsText, itemView, lineDiff, Transcript } from '../src/transcript';
import { createParams, Draft } from '../src/draft';
import type { Task, TranscriptEntry } from '../src/protocol';

const at = '2026-01-01T00:00:00Z';
const base: Task = {
  id: 't1', title: 'Write notes', description: '', acceptanceCriteria: [], type: 'implement', profile: 'default', mode: 'executor',
  priority: 0, driver: 'pty', status: 'running', activity: 'thinking', attempt: 1, createdAt: at, updatedAt: at,
  worktree: { path: '/w/t1', branch: 'familiar/t1', baseRef: 'main', baseCommit: 'abc' },
};

test('a transcript joins a response\'s chunks, updates a tool call in place, sums a turn\'s usage and skips replayed seqs', () => {
  const tr = new Transcript();
  const e = (x: Partial<TranscriptEntry>): TranscriptEntry => ({ kind: 'text', at, ...x });
  tr.add(e({ kind: 'prompt', text: 'Write notes.md' }), 1);
  tr.add(e({ kind: 'text', messageId: 'm1', text: 'I will ' }), 2);
  tr.add(e({ kind: 'text', messageId: 'm1', text: 'write it.' }), 3);
  tr.add(e({ kind: 'tool_call', toolCall: { id: 'c1', name: 'Write', kind: 'edit', title: 'Write /w/t1/notes.md', status: 'pending', startedAt: at } }), 4);
  tr.add(e({ kind: 'usage', usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.002 } }), 5);
  tr.add(e({ kind: 'tool_call', toolCall: { id: 'c1', name: 'Write', kind: 'edit', title: 'Write /w/t1/notes.md', status: 'completed', durationMs: 1500, startedAt: at,
    files: ['/w/t1/notes.md'], diffs: [{ path: '/w/t1/notes.md', oldText: '', newText: 'hello\n' }] } }), 6);
  tr.add(e({ kind: 'usage', usage: { inputTokens: 200, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.003 } }), 7);
  assert.equal(tr.add(e({ kind: 'text', messageId: 'm1', text: 'again' }), 3), undefined, 'a replayed seq is not applied twice');
  assert.deepEqual(tr.items.map((i) => i.kind), ['prompt', 'text', 'tool', 'turn']);
  assert.equal(tr.items[1].text, 'I will write it.');
  const v = itemView(tr.items[2], '/w/t1');
  assert.deepEqual(v.row, { title: 'Write notes.md', status: 'completed', duration: '2s', files: ['notes.md'], kind: 'edit' });
  assert.deepEqual(v.diffs, [{ path: 'notes.md', lines: [['+', 'hello']] }]);
  assert.equal(itemView(tr.items[3]).usage, '300 tokens in · 30 out · $0.005');
  assert.equal(itemAsText(tr.items[2], '/w/t1'), '\x1b[36m✓ Write notes.md\x1b[0m \x1b[2m2s\x1b[0m\r\n');
});

test('a line diff keeps common lines', () => {
  assert.deepEqual(lineDiff('a\nb\nc\n', 'a\nx\nc\n'), [[' ', 'a'], ['-', 'b'], ['+', 'x'], [' ', 'c']]);
  assert.deepEqual(lineDiff('', 'new\n'), [['+', 'new']]);
});

test('the task view\'s header: the state in words, the queue position as the server gives it, the actions that fit', () => {
  const q = header({ ...base, status: 'queued', queuePosition: 1, estimatedStartSec: 30 }, Date.parse(at));
  assert.equal(q.state, 'queued');
  assert.deepEqual(q.facts.find(([k]) => k === 'Queue'), ['Queue', '#1']);
  assert.deepEqual(q.actions.map((a) => a.command), ['pause', 'openTerminal', 'setMode', 'cancel']);
  const r = header({ ...base, activityDetail: 'model error 500, retrying (3 of 10)' }, Date.parse(at));
  assert.equal(r.state, 'running — model error 500, retrying (3 of 10)');
  const ready = header({ ...base, status: 'merging', result: { success: true, summary: '', changedFiles: [], commits: [], costUsd: 0.004 } }, Date.parse(at));
  assert.deepEqual(ready.actions.map((a) => a.command), ['continue', 'showChanges', 'merge', 'openTerminal', 'remove']);
  assert.equal(ready.cost, '$0.004');
});

test('the task view shows the worktree short (the repository\'s or ~\'s), the whole path in its tooltip and Copy', () => {
  const wt = (path: string) => header({ ...base, worktree: { ...base.worktree!, path } }, Date.parse(at), undefined, { repo: '/home/ann/src/app', home: '/home/ann' })
    .facts.find(([k]) => k === 'Worktree');
  const dflt = '/home/ann/.local/share/familiar/worktrees/app-1a2b3c4d/3f2a-fix-login';
  assert.deepEqual(wt(dflt), ['Worktree', '~/.local/share/familiar/worktrees/app-1a2b3c4d/3f2a-fix-login', dflt]);
  assert.deepEqual(wt('/home/ann/src/app/.worktrees/3f2a'), ['Worktree', '.worktrees/3f2a', '/home/ann/src/app/.worktrees/3f2a']);
  // Neither (XDG_DATA_HOME elsewhere): the last three parts of a long one.
  const far = '/tmp/ci-runner-71623/data/familiar/worktrees/app-1a2b3c4d/3f2a-fix-login';
  assert.deepEqual(wt(far), ['Worktree', '…/worktrees/app-1a2b3c4d/3f2a-fix-login', far]);
  assert.deepEqual(wt('/wt/3f2a'), ['Worktree', '/wt/3f2a', '/wt/3f2a']);
  // A block's detail as plain text, not Markdown.
  const b = header({ ...base, status: 'blocked', blocked: { reason: 'agent_exited', detail: 'claude exited with code 1. `familiar doctor` checks the setup.' } }, Date.parse(at));
  assert.deepEqual(b.facts.find(([k]) => k === 'Blocked'), ['Blocked', 'claude exited with code 1. “familiar doctor” checks the setup.']);
});

test('New Task\'s form: a pasted multi-line description is kept, criteria one per line, removed context left out', () => {
  const d = { title: ' Three lines ', description: 'one\ntwo\nthree\n', type: 'fix', mode: 'executor', profile: '', skills: [], criteria: '- builds\n\n* tests pass\n', priority: 0, files: [], notes: '' } as Draft;
  assert.deepEqual(createParams(d), { title: 'Three lines', description: 'one\ntwo\nthree', type: 'fix', mode: 'executor', acceptanceCriteria: ['builds', 'tests pass'] });
  assert.deepEqual(createParams({ ...d, description: '  ', files: ['a.ts'], skills: ['go'], priority: 2 }).hints, { files: ['a.ts'] });
  assert.equal(createParams({ ...d, description: '  ' }).description, 'Three lines');
});
