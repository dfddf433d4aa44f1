import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { noAbsolutePaths, plainText, settingsFrom, shortPath, activityText, compareTime, counts, describe, duration, EndAnnouncer, endNotice, groupOf, stillEnded, isMultiSelect, noLinks, roughly, tasksIn, statusText, taskLabel, money, relPath, permissionDetail, typed, withoutResumeHint, proposedText, permissionWhat, alwaysChoices, linkText, truncate } from '../src/model';
import type { Question, Task, TaskCompletedNotification } from '../src/protocol';
import type { TaskEnd } from '../src/model';

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
    { ...base, id: 'a', status: 'queued', queuePosition: 2 },
    { ...base, id: 'b', status: 'queued', queuePosition: 1 },
    { ...base, id: 'c', status: 'waiting' },
  ] as Task[];
  assert.deepEqual(tasksIn('queued', tasks).map((t) => t.id), ['b', 'a']);
  assert.deepEqual(counts(tasks), { running: 0, waiting: 1, queued: 2, ready: 0, blocked: 0 });
});

test('describes activity, elapsed, queue position, ETA, cost and countdown', () => {
  const now = Date.parse('2026-01-01T00:01:15Z');
  assert.equal(describe({ ...base, activity: 'running_command', startedAt: '2026-01-01T00:00:00Z' }, now), 'running a command · 1m 15s');
  assert.equal(describe({ ...base, status: 'queued', queuePosition: 1, estimatedStartSec: 90 }, now), '#1 in queue · starts in about 2 min');
  assert.equal(describe({
    ...base, status: 'merging', startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:30Z',
    result: { success: true, summary: '', changedFiles: [{ path: 'a', status: 'added' }], commits: [], costUsd: 0.123 },
  }, now), '1 file changed · 30s · $0.12');
  assert.equal(describe({
    ...base, status: 'waiting',
    pendingQuestion: { id: 'q', kind: 'permission', text: '', tool: 'Bash', input: { command: 'ls' }, options: [], allowText: false, expiresAt: '2026-01-01T00:02:00Z' },
  }, now), 'asks to run Bash: ls · 0:45 left');
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

const fail = (id: string, over: Partial<TaskCompletedNotification> = {}): TaskCompletedNotification => ({
  seq: 10, id, result: { success: false, summary: '', changedFiles: [], commits: [] }, status: 'blocked', ...over,
}) as TaskCompletedNotification;

test('a failed end is a warning naming the task, the reason in words and the actions that fit it', () => {
  const cases: [Partial<TaskCompletedNotification>, RegExp, string[]][] = [
    [{ reason: 'auth', detail: 'Invalid API key; run `claude login`, or set ANTHROPIC_API_KEY' },
      /^Familiar · "Fix it" is blocked: the API refused its credentials — Invalid API key; run “claude login”, or set ANTHROPIC_API_KEY\.$/, ['Run Doctor', 'Retry', 'Open Terminal']],
    [{ reason: 'start_failed', detail: 'claude was not found' }, /is blocked: the agent could not start — claude was not found\.$/, ['Run Doctor', 'Retry']],
    [{ reason: 'api_error', detail: 'Overloaded.' }, /is blocked: the API could not be reached — Overloaded\.$/, ['Continue…', 'Retry', 'Open Terminal']],
    [{ reason: 'timeout' }, /is blocked: it made no progress for too long$/, ['Continue…', 'Retry', 'Open Terminal']],
    [{ reason: 'interrupted' }, /is blocked: familiar stopped while it ran$/, ['Continue…', 'Retry', 'Open Terminal']],
    [{ reason: 'usage_limit', resetsAt: '2026-01-01T15:00:00Z' }, /is blocked: the usage limit is reached until \S+/, ['Continue…', 'Retry', 'Open Terminal']],
    [{ reason: 'budget', detail: 'the task spent $2.01 of its $2.00 budget' }, /is blocked: it spent its budget — the task spent \$2\.01 of its \$2\.00 budget\.$/, ['Continue…', 'Retry', 'Open Terminal']],
    [{ reason: 'agent_failed' }, /is blocked: the agent failed$/, ['Retry', 'Open Terminal']],
    [{ reason: 'agent_exited' }, /is blocked: the agent exited before it finished$/, ['Retry', 'Open Terminal']],
    [{ status: 'cancelled', reason: 'cancelled', detail: 'familiar was stopped for good' }, /^Familiar · "Fix it" was cancelled — familiar was stopped for good\.$/, ['Retry', 'Open Terminal']],
  ];
  for (const [over, text, actions] of cases) {
    const end = new EndAnnouncer().completed(fail('t1', over))!;
    const n = endNotice('Fix it', end);
    assert.equal(n.level, 'warning', over.reason);
    assert.match(n.text, text);
    if (over.reason?.includes('_')) assert.ok(!n.text.includes(over.reason), 'a reason in words, not its code');
    assert.deepEqual(n.actions, actions, over.reason);
  }
  // An api_error's HTTP status comes from the task.
  const t: Task = { ...base, status: 'blocked', blocked: { reason: 'api_error', detail: 'Internal server error', status: 500 } };
  assert.match(endNotice('x', new EndAnnouncer().updated(t)!).text, /is blocked: the API kept failing \(HTTP 500\) — Internal server error\.$/);
});

test('success: ready to merge, or done with no changes and no Merge', () => {
  const ok = (over: Partial<TaskCompletedNotification['result']>, status: Task['status'] = 'merging'): TaskCompletedNotification =>
    ({ seq: 3, id: 't', status, result: { success: true, summary: 'Did it.', changedFiles: [{ path: 'a', status: 'added' }], commits: [], ...over } }) as TaskCompletedNotification;
  const ready = endNotice('T', new EndAnnouncer().completed(ok({}))!, { changedFiles: 1, summary: 'Did it.' });
  assert.deepEqual(ready, { level: 'info', text: 'Familiar · "T" is ready to merge (1 file changed). Did it.', actions: ['Show Changes', 'Merge…'] });
  for (const status of ['merging', 'merged'] as const) {
    const none = endNotice('T', new EndAnnouncer().completed(ok({ noChanges: true, changedFiles: [] }, status))!);
    assert.equal(none.text, 'Familiar · "T" is done, no changes.');
    assert.deepEqual(none.actions, ['Continue…']);
  }
  // In the view: done, not ready to merge, and not counted as to merge.
  const t: Task = { ...base, status: 'merging', result: { success: true, summary: '', changedFiles: [], commits: [], noChanges: true } };
  assert.equal(describe(t, Date.now()), 'done, no changes');
  assert.deepEqual(tasksIn('ready', [t]), []);
  assert.deepEqual(tasksIn('done', [t]).map((x) => x.id), ['t1']);
  assert.equal(counts([t]).ready, 0);
});

test('a task back from merged by an undo is not announced ready to merge again; run again, its next end is', () => {
  const ends = new EndAnnouncer();
  const done = { seq: 3, id: base.id, status: 'merging', result: { success: true, summary: '', changedFiles: [{ path: 'a', status: 'added' }], commits: [] } } as unknown as TaskCompletedNotification;
  assert.ok(ends.completed(done));
  assert.equal(ends.updated({ ...base, status: 'merged' }), undefined);
  // A window that connects now learns the task as merged.
  const other = new EndAnnouncer();
  other.known({ ...base, status: 'merged' });
  for (const e of [ends, other]) {
    // Undone: merging again, as task/updated says; a task/completed of it
    // (replayed after a reconnect) is not news either.
    assert.equal(e.updated({ ...base, status: 'merging' }), undefined);
    assert.equal(e.completed({ ...done, seq: 4 }), undefined);
    // Continued: its next end is news.
    e.updated({ ...base, status: 'running' });
    assert.ok(e.completed({ ...done, seq: 5 }));
  }
  // A window that first hears of the task as merging (its end, not an
  // undo) still announces the task/completed that follows.
  const fresh = new EndAnnouncer();
  assert.equal(fresh.updated({ ...base, status: 'merging' }), undefined);
  assert.ok(fresh.completed(done));
});

test('an end is announced once, whichever of task/updated and task/completed comes first', () => {
  const blocked: Task = { ...base, status: 'blocked', blocked: { reason: 'auth', detail: 'no login' } };
  // An older familiar: only the task/updated.
  let a = new EndAnnouncer();
  assert.equal(a.updated(blocked)?.reason, 'auth');
  assert.equal(a.updated({ ...blocked, updatedAt: '2026-01-01T00:00:09Z' }), undefined, 'a later update of the same block');
  // Both, in either order.
  a = new EndAnnouncer();
  assert.ok(a.updated(blocked));
  assert.equal(a.completed(fail('t1', { reason: 'auth' }), blocked), undefined);
  a = new EndAnnouncer();
  assert.ok(a.completed(fail('t1', { reason: 'auth' })));
  assert.equal(a.updated(blocked), undefined);
  // Continued, it runs again and can end again.
  assert.equal(a.updated({ ...blocked, status: 'running', blocked: undefined }), undefined);
  assert.ok(a.updated(blocked), 'blocked again after running');
  // A cancel by the person sends no task/completed and is not announced.
  assert.equal(new EndAnnouncer().updated({ ...base, status: 'cancelled' }), undefined);
  // Blocked before this window connected: not news.
  a = new EndAnnouncer();
  a.known(blocked);
  assert.equal(a.updated(blocked), undefined);
  assert.equal(a.completed(fail('t1')), undefined);
  // Replayed after a reconnect: announced only while the task is still so.
  const end = new EndAnnouncer().updated(blocked)!;
  assert.equal(stillEnded(blocked, end), true);
  assert.equal(stillEnded({ ...blocked, status: 'merging' }, end), false, 'continued and finished since');
  // Counted in the status bar.
  assert.equal(counts([blocked, { ...base, id: 't2', status: 'blocked' }]).blocked, 2);
});

test('words, not codes: status, attempt, cost, activity detail, blocked reason, paths', () => {
  const now = Date.parse('2026-01-01T00:01:15Z');
  assert.equal(statusText('merging'), 'ready to merge');
  assert.equal(taskLabel({ title: 'Fix it', attempt: 1 }), 'Fix it');
  assert.equal(taskLabel({ title: 'Fix it', attempt: 3 }), 'Fix it (attempt 3)');
  assert.equal(money(0.004), '$0.004');
  assert.equal(money(0.0004), '<$0.001');
  assert.equal(money(0.126), '$0.13');
  assert.equal(describe({ ...base, activity: 'thinking', activityDetail: 'model error 500, retrying (3 of 10)', startedAt: '2026-01-01T00:00:00Z' }, now),
    'model error 500, retrying (3 of 10) · 1m 15s');
  assert.equal(describe({ ...base, status: 'blocked', blocked: { reason: 'auth', detail: 'Run claude auth login.' } }, now), 'the API refused its credentials');
  assert.equal(describe({ ...base, status: 'running', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.003 } }, now), 'thinking · $0.003');
  assert.equal(relPath('/w/t1/notes.md', '/w/t1'), 'notes.md');
  assert.equal(relPath('/elsewhere/notes.md', '/w/t1'), '/elsewhere/notes.md');
  const q = { id: 'q', kind: 'permission', text: '', tool: 'Write', input: { file_path: '/w/t1/docs/a.md' }, options: [], allowText: false } as Question;
  assert.equal(permissionDetail(q, '/w/t1'), 'docs/a.md');
});

test('a paused task is not counted running; a cancelled one is not done', () => {
  const tasks = [{ ...base, id: 'a', status: 'paused' }, { ...base, id: 'b', status: 'running' }, { ...base, id: 'c', status: 'cancelled' }] as Task[];
  assert.equal(counts(tasks).running, 1);
  assert.equal(counts(tasks).paused, 1);
  assert.equal(groupOf('cancelled'), 'cancelled');
  assert.deepEqual(tasksIn('done', tasks), []);
});

test('a finished task\'s terminal: no resume hint, and the terminal\'s own answers are not typing', () => {
  assert.equal(withoutResumeHint('bye\r\nResume this session with:\r\nclaude --resume 0f6c2a7e-1234-4abc-9def-0123456789ab\r\n$ '), 'bye\r\nResume this session with:\r\n$ ');
  assert.equal(withoutResumeHint('plain'), 'plain');
  assert.equal(typed('\x1b[12;1R'), false);
  assert.equal(typed('\x1b[?1;2c'), false);
  assert.equal(typed('\x1b[I'), false);
  assert.equal(typed('y'), true);
  assert.equal(typed('\r'), true);
});

test('a no-changes end whose summary only says done does not repeat it', () => {
  const e = { id: 't', status: 'merging', success: true, noChanges: true } as const;
  assert.equal(endNotice('T', e, { summary: 'Done.' }).text, 'Familiar · "T" is done, no changes.');
  assert.equal(endNotice('T', e, { summary: 'Nothing needed changing.' }).text, 'Familiar · "T" is done, no changes. Nothing needed changing.');
});

test('decide with the facts: the proposed file, the permission in words, allow-always rules', () => {
  assert.equal(proposedText('Write', { file_path: '/w/a.md', content: 'new\n' }, 'old\n'), 'new\n');
  assert.equal(proposedText('Edit', { old_string: 'b', new_string: '$&c' }, 'abab'), 'a$&cab');
  assert.equal(proposedText('Edit', { old_string: 'b', new_string: 'c', replace_all: true }, 'abab'), 'acac');
  assert.equal(proposedText('Edit', { old_string: 'zz', new_string: 'c' }, 'abab'), undefined);
  assert.equal(proposedText('MultiEdit', { edits: [{ old_string: 'a', new_string: 'x' }, { old_string: 'xb', new_string: 'y' }] }, 'ab'), 'y');
  const perm = (tool: string, input: any, options: Question['options'] = []) => ({ id: 'q', kind: 'permission', text: '', tool, input, options, allowText: false }) as Question;
  assert.equal(permissionWhat(perm('Write', { file_path: '/w/t/docs/a.md' }), '/w/t'), 'write docs/a.md');
  assert.equal(permissionWhat(perm('Bash', { command: 'npm test' })), 'run Bash: npm test');
  assert.equal(permissionWhat(perm('mcp__github__create_issue', { title: 'x' })), 'use create_issue of the github MCP server');
  const q = perm('Write', {}, [
    { id: 'allow', label: 'Allow' },
    { id: 'allow_always', label: 'Always allow Edit(./docs/**)', rule: 'Edit(./docs/**)' },
    { id: 'allow_always_exact', label: 'Always allow Edit(./docs/a.md)', rule: 'Edit(./docs/a.md)' },
    { id: 'deny', label: 'Deny' },
  ]);
  assert.deepEqual(alwaysChoices(q).map((c) => [c.id, c.label]), [
    ['allow_always', 'Always allow Edit(./docs/**)'], ['allow_always_exact', 'Always allow Edit(./docs/a.md)']]);
  assert.equal(linkText('[1] do it'), '\\[1\\] do it');
});

test('a notification shows Markdown as the plain text it stands for', () => {
  assert.equal(plainText('Wrote **notes.md** with two lines.'), 'Wrote notes.md with two lines.');
  assert.equal(plainText('Run `familiar doctor`, then __retry__ and *check* _it_.'), 'Run “familiar doctor”, then retry and check it.');
  assert.equal(plainText('## Summary\n> quoted\n```go\nx := 1\n```\n- [docs](https://go.dev) and ![img](a.png)'), 'Summary\nquoted\n\nx := 1\n\n- docs (https://go.dev) and img');
  // Not emphasis: words, paths, globs, arithmetic, a lone backtick.
  for (const s of ['snake_case_name and __init__.py', 'Edit(./src/**) and Read(./**)', '2*3*4 and a * b', 'it\'s `half', 'src/*.go']) assert.equal(plainText(s), s);
  // The ready notification of the task view's scenario ("Notes").
  const n = endNotice('Notes', { id: 't', status: 'merging', success: true } as TaskEnd, { changedFiles: 1, summary: 'Wrote **notes.md** with two lines.' });
  assert.equal(n.text, 'Familiar · "Notes" is ready to merge (1 file changed). Wrote notes.md with two lines.');
  const blocked = endNotice('X', { id: 't', status: 'blocked', success: false, reason: 'agent_exited', detail: 'claude exited with code 1. `familiar doctor` checks the setup.' } as TaskEnd);
  assert.doesNotMatch(blocked.text, /`/);
});

test('paths shown short, and no absolute path in an editor tab\'s title', () => {
  assert.equal(shortPath('/r/app/src/a.go', '/r/app', '/home/ann'), 'src/a.go');
  assert.equal(shortPath('/home/ann/x/y', '/r/app', '/home/ann'), '~/x/y');
  assert.equal(shortPath('/home/ann', undefined, '/home/ann'), '~');
  assert.equal(shortPath('/etc/hosts', '/r/app', '/home/ann'), '/etc/hosts');
  const where = { worktree: '/data/familiar/worktrees/app-1a/3f-notes', repo: '/r/app', home: '/home/ann' };
  const cases: [string, string][] = [
    ['notes.md: Write /data/familiar/worktrees/app-1a/3f-notes/notes.md', 'notes.md: Write notes.md'],
    ['/r/app/README.md: as it is ↔ as "Docs" proposes', 'README.md: as it is ↔ as "Docs" proposes'],
    ['/home/ann/.bashrc: Edit /home/ann/.bashrc', '~/.bashrc: Edit ~/.bashrc'],
    ['/etc/nginx/sites/default: Write (/etc/nginx/sites/default)', '…/sites/default: Write (…/sites/default)'],
    ['notes.md: Bash echo a/b', 'notes.md: Bash echo a/b'],
  ];
  for (const [title, want] of cases) {
    const got = noAbsolutePaths(title, where);
    assert.equal(got, want);
    assert.doesNotMatch(got, /(^|[\s("'])\/\w/, `an absolute path in ${got}`);
  }
});

test('the settings sent by default keep a finished task\'s claude warm ten minutes', () => {
  const s = settingsFrom((_k, def) => def);
  assert.equal(s.warmAgentSec, 600);
  assert.equal(settingsFrom(<T>(k: string, def: T) => (k === 'warmAgentSec' ? 0 : def) as T).warmAgentSec, 0);
});

test('truncate reads only what it shows, and cuts as collapsing the whole would', () => {
  const whole = (s: string, n: number) => {
    const one = s.replace(/\s+/g, ' ').trim();
    return one.length > n ? one.slice(0, n - 1) + '…' : one;
  };
  // Words and runs of whitespace of every length, the cut falling anywhere (in a run too).
  let seed = 7;
  const rnd = (k: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % k;
  for (let i = 0; i < 300; i++) {
    let s = '';
    const len = rnd(3) === 0 ? rnd(40) : rnd(3000);
    while (s.length < len) s += rnd(3) ? 'word'.slice(0, 1 + rnd(4)) : [' ', '\n', '\t  ', ' '.repeat(1 + rnd(900))][rnd(4)];
    for (const n of [1, 2, 10, 300]) assert.equal(truncate(s, n), whole(s, n), `n=${n} s=${JSON.stringify(s.slice(0, 80))}…`);
  }
  // Mostly whitespace: the prefix grows until it holds enough.
  const sparse = Array.from({ length: 50 }, (_, i) => `w${i}` + ' '.repeat(5000)).join('');
  assert.equal(truncate(sparse, 100), whole(sparse, 100));
  assert.equal(truncate(' '.repeat(100000), 10), '');
  const long = 'x '.repeat(50000);
  assert.equal(truncate(long, 300), whole(long, 300));
});
