import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { alwaysCovers, callRow, composeState, header, itemAsText, itemView, lineDiff, personWords, questionCard, Transcript } from '../src/transcript';
import { blockedLabel, notRetrying } from '../src/model';
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
  // The file is named in the title, so not again beside it.
  assert.deepEqual(v.row, { title: 'Write notes.md', status: 'completed', duration: '2s', files: [], kind: 'edit' });
  assert.deepEqual(v.diffs, [{ path: 'notes.md', lines: [['+', 'hello']] }]);
  assert.equal(itemView(tr.items[3]).usage, '300 tokens in · 30 out · $0.005');
  assert.equal(itemAsText(tr.items[2], '/w/t1'), '\x1b[36m✓ Write notes.md\x1b[0m \x1b[2m2s\x1b[0m\r\n');
});

test('a call\'s row names beside its title only the files the title does not', () => {
  const c = { id: 'c2', name: 'Bash', kind: 'execute', title: 'sed -i s/a/b/ /w/t1/notes.md', status: 'completed', startedAt: at,
    files: ['/w/t1/notes.md', '/w/t1/docs/notes.md', '/w/t1/a.md'] } as any;
  assert.deepEqual(callRow(c, '/w/t1').files, ['docs/notes.md', 'a.md'], 'a file is left out only when the title names that very path');
  assert.deepEqual(callRow({ ...c, title: 'Read data.md', files: ['/w/t1/a.md'] }, '/w/t1').files, ['a.md'], 'a name inside another is no match');
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
  assert.deepEqual(ready.actions.map((a) => a.command), ['continue', 'showChanges', 'merge', 'openTerminal', 'openWorktree', 'terminalInWorktree', 'remove']);
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

test('issue 36: the first prompt shows the person\'s words, not familiar\'s template; later ones as typed; familiar\'s own say so', () => {
  const tr = new Transcript();
  const template = 'You are implementing a change in this repository.\n# Task: Notes\nWrite *notes*.\nTwo lines.\n## When you finish\nEnd your final message…';
  tr.add({ kind: 'prompt', at, text: template }, 1);
  tr.add({ kind: 'text', at, messageId: 'm1', text: 'ok' }, 2);
  tr.add({ kind: 'prompt', at, text: 'Also **this**.\nAnd that.' }, 3);
  tr.add({ kind: 'prompt', at, text: 'familiar stopped you before you finished (a pause or a restart). Continue the task where you left off.' }, 4);
  const person = personWords({ title: 'Notes', description: 'Write *notes*.\nTwo lines.', acceptanceCriteria: ['it builds'] });
  assert.equal(person, 'Write *notes*.\nTwo lines.\n\nAcceptance criteria:\n- it builds');
  assert.deepEqual(itemView(tr.items[0], '/w', person), { key: tr.items[0].key, kind: 'prompt', text: person, who: 'You' });
  assert.equal(itemView(tr.items[2], '/w', person).text, 'Also **this**.\nAnd that.');
  assert.equal(itemView(tr.items[3], '/w', person).who, 'Familiar');
  assert.ok(!itemAsText(tr.items[0], '/w', person).includes('When you finish'), 'the stream terminal shows no template');
  assert.equal(personWords({ title: 'Only a title', description: '  ', acceptanceCriteria: [] }), 'Only a title');
});

test('issue 36: the plan comes from successful TodoWrite calls only', () => {
  const tr = new Transcript();
  const call = (id: string, status: string) => ({ kind: 'tool_call', at, toolCall: { id, name: 'TodoWrite', kind: 'other', title: 'TodoWrite', status, startedAt: at } } as TranscriptEntry);
  const plan = (s: string) => ({ kind: 'plan', at, plan: [{ content: 'step', status: s }] } as TranscriptEntry);
  tr.add(call('c1', 'pending'), 1);
  assert.equal(tr.add(plan('completed'), 2), undefined, 'a plan waits for its call');
  tr.add(call('c1', 'failed'), 3);
  assert.deepEqual(tr.alsoChanged(), []);
  assert.ok(!tr.items.some((i) => i.kind === 'plan'), 'a failed TodoWrite sets no plan');
  tr.add(call('c2', 'pending'), 4);
  tr.add(plan('in_progress'), 5);
  const ended = tr.add(call('c2', 'completed'), 6);
  assert.equal(ended?.kind, 'tool');
  const also = tr.alsoChanged();
  assert.equal(also.length, 1);
  assert.deepEqual(also[0].plan, [{ content: 'step', status: 'in_progress' }]);
  // A plan with no TodoWrite before it (an older familiar) shows at once.
  const tr2 = new Transcript();
  assert.equal(tr2.add(plan('pending'), 1)?.kind, 'plan');
});

test('issue 36: the message box says what Enter does, and Stop shows while a turn runs', () => {
  const st = (x: Partial<Task>) => composeState({ ...base, ...x });
  assert.deepEqual([st({ status: 'running' }).enabled, st({ status: 'running' }).stop], [true, true]);
  assert.match(st({ status: 'running' }).note, /when it finishes this turn/);
  assert.match(st({ status: 'merging' }).note, /follow-up/);
  assert.equal(st({ status: 'merged' }).enabled, false);
  assert.equal(st({ status: 'blocked', blocked: { reason: 'cancelled_by_user' } as any }).enabled, false);
  assert.equal(st({ status: 'blocked', blocked: { reason: 'api_error' } as any }).enabled, true);
  assert.equal(st({ status: 'paused' }).stop, false);
  const prose = st({ status: 'waiting', pendingQuestion: { id: 'q', kind: 'question', text: 'Interrupted · What should Claude do instead?', options: [], allowText: true } });
  assert.deepEqual([prose.enabled, prose.stop], [true, false]);
  assert.match(prose.note, /answers the agent's question/);
});

test('issue 36: a question\'s card: the relative path, Allow Always only when a rule covers the call, why not in words, accept edits, inline options', () => {
  const perm = (tool: string, input: any, options: { id: string; label: string; rule?: string }[]) => ({ id: 'q1', kind: 'permission' as const, text: '', tool, input, options, allowText: false });
  const w = questionCard(perm('Write', { file_path: '/w/t1/docs/notes.md', content: 'x' }, [
    { id: 'allow', label: 'Allow once' }, { id: 'allow_always', label: 'Allow always: Edit(docs/**)', rule: 'Edit(docs/**)' }, { id: 'deny', label: 'Deny' },
    { id: 'mode_accept_edits', label: 'Allow, and switch…' }]), '/w/t1');
  assert.equal(w.title, 'Wants to write docs/notes.md');
  assert.deepEqual([w.reviewable, w.always, w.acceptEdits, w.alwaysWhyNot], [true, true, true, undefined]);
  const chained = questionCard(perm('Bash', { command: 'cd x && make' }, [
    { id: 'allow', label: 'Allow once' }, { id: 'allow_always', label: 'Allow (no rule can cover this call, so nothing is remembered)' }, { id: 'deny', label: 'Deny' }]), '/w/t1');
  assert.equal(chained.title, 'Wants to run Bash:');
  assert.equal(chained.detail, 'cd x && make');
  assert.equal(chained.always, false);
  assert.match(chained.alwaysWhyNot!, /chains several commands/);
  assert.equal(chained.acceptEdits, false);
  // The PTY's own dialog: its allow-always remembers for the session.
  assert.equal(alwaysCovers({ id: 'q', kind: 'permission', text: '', options: [{ id: 'allow_always', label: 'Allow always (this session)' }], allowText: false }), true);
  const inline = questionCard({ id: 'q2', kind: 'question', text: 'Should I use Postgres or SQLite? 1. Postgres 2. SQLite', options: [], allowText: true }, '/w/t1');
  assert.deepEqual(inline.options, [{ label: 'Postgres' }, { label: 'SQLite' }]);
  const own = questionCard({ id: 'q3', kind: 'question', text: 'Which?\n- a\n- b', options: [{ id: 'o1', label: 'a' }, { id: 'o2', label: 'b' }], allowText: true }, '/w/t1');
  assert.deepEqual(own.options, [{ id: 'o1', label: 'a' }, { id: 'o2', label: 'b' }]);
});

test('issue 36: the words of a blocked task: the reason named, no retry count once it stopped', () => {
  assert.equal(blockedLabel('merge'), 'could not be merged twice');
  assert.equal(blockedLabel('some_new_reason'), 'some new reason');
  assert.equal(notRetrying('model error 401, retrying (3 of 10): invalid x-api-key'), 'model error 401: invalid x-api-key');
  const h = header({ ...base, status: 'blocked', blocked: { reason: 'merge' } as any }, Date.now());
  assert.deepEqual(h.facts.find(([k]) => k === 'Blocked'), ['Blocked', 'could not be merged twice']);
});
