// Fast tests of the extension's client logic in plain Node: the real
// familiar binary, the real claude CLI, the scripted fake Messages API.

import { test, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { FamiliarClient } from '../src/client';
import { EndAnnouncer, endNotice, settingsFrom, TaskEnd } from '../src/model';
import { OutputPump } from '../src/pump';
import { applyPatch, filePatch } from '../src/patch';
import type { TaskCompletedNotification, TaskQuestionNotification } from '../src/protocol';
import { binaries, FakeModel, sandbox, Sandbox, skipWithoutClaude, waitFor } from './env';

let bins: { familiar: string; fakemodel: string };
let model: FakeModel;

before(async () => {
  bins = binaries();
  model = await FakeModel.start(bins.fakemodel);
});
after(async () => {
  await model?.stop();
});

function client(sb: Sandbox, lastSeq = 0): FamiliarClient {
  return new FamiliarClient({
    familiarPath: bins.familiar,
    workspaceRoot: sb.repo,
    env: { ...sb.env, ...model.env },
    lastSeq,
    backoffMs: [50, 100, 200],
    settings: () => ({ maxConcurrent: 3, approvalTimeoutSec: 120 }),
    log: (level, msg) => { if (process.env.FAMILIAR_TEST_LOG) console.error(`[familiar ${level}] ${msg}`); },
  });
}

const bashTask = (file: string, text: string) => ({
  title: `write ${file}`,
  description: `@@TOOL Bash {"command":"printf '${text}' > ${file}"}`,
});

test('a task from create through permission, diff, merge and undo', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  const c = client(sb);
  try {
    const init = await c.start();
    assert.equal(init.claude.available, true);
    assert.equal(c.state, 'connected');

    const questions: TaskQuestionNotification[] = [];
    const completed: TaskCompletedNotification[] = [];
    c.onQuestion(([q]) => questions.push(q));
    c.onCompleted(([d]) => completed.push(d));

    const t = await c.request('task/create', bashTask('hello.txt', 'hello from the agent\\n'));
    const q = await waitFor('the permission question', () => questions.find((x) => x.id === t.id));
    assert.equal(q.question.kind, 'permission');
    assert.equal(q.question.tool, 'Bash');
    assert.match(q.question.input.command, /hello\.txt/);
    assert.equal(c.tasks.get(t.id)?.status, 'waiting');

    await c.request('task/respond', { id: t.id, questionId: q.question.id, optionId: 'allow' });
    await waitFor('completion', () => completed.find((x) => x.id === t.id), 90000);
    const done = await waitFor('ready to merge', () => c.tasks.get(t.id)?.status === 'merging' && c.tasks.get(t.id));
    assert.deepEqual(done.result!.changedFiles.map((f) => f.path), ['hello.txt']);

    // The diff view's "head" side is rebuilt from task/diff's patch.
    const diff = await c.request('task/diff', { id: t.id });
    assert.equal(diff.files[0].status, 'added');
    const head = applyPatch('', filePatch(diff.patch, 'hello.txt'));
    assert.equal(head, 'hello from the agent\n');

    const merged = await c.request('task/merge', { id: t.id, strategy: 'squash' });
    assert.equal(merged.status, 'merged');
    assert.equal(fs.readFileSync(path.join(sb.repo, 'hello.txt'), 'utf8'), 'hello from the agent\n');
    await c.request('task/undo', { id: t.id });
    assert.equal(fs.existsSync(path.join(sb.repo, 'hello.txt')), false);

    // Bad input: a clear error, and the connection keeps working.
    await assert.rejects(c.request('task/get', { id: 'nope' }), (e: any) => e.code === -32001);
    // A wrong param is a compile error now: sent anyway, as an older client might.
    await assert.rejects(c.request('task/create', { description: 'no title' } as any), (e: any) => e.code === -32602 && /title/.test(JSON.stringify(e.data)));
    assert.equal((await c.request('task/get', { id: t.id })).id, t.id);
  } finally {
    await c.stop();
    sb.cleanup();
  }
});

test('patch reconstruction matches git for modified files', () => {
  const sb = sandbox();
  try {
    const git = (...a: string[]) => execFileSync('git', a, { cwd: sb.repo, env: sb.env, encoding: 'utf8' });
    const before = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\n';
    fs.writeFileSync(path.join(sb.repo, 'a.txt'), before);
    fs.writeFileSync(path.join(sb.repo, 'b.txt'), 'no newline');
    git('add', '.');
    git('commit', '-qm', 'base');
    const after = before.replace('line 3\n', 'line three\nextra\n').replace('line 30\n', '') + 'tail';
    fs.writeFileSync(path.join(sb.repo, 'a.txt'), after);
    fs.writeFileSync(path.join(sb.repo, 'b.txt'), 'no newline\nnow with one\n');
    const patch = git('diff');
    assert.equal(applyPatch(before, filePatch(patch, 'a.txt')), after);
    assert.equal(applyPatch('no newline', filePatch(patch, 'b.txt')), 'no newline\nnow with one\n');
    assert.equal(applyPatch('different', filePatch(patch, 'b.txt')), undefined);
  } finally {
    sb.cleanup();
  }
});

test('the terminal pump replays then streams the exact output log', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  const c = client(sb);
  try {
    await c.start();
    const t = await c.request('task/create', { title: 'talk', description: '@@TEXT first line\\nsecond line' });
    // Open the "terminal" once some output exists, as a person would.
    await waitFor('some output', async () => (await c.output(t.id, 0, 1)).size > 0);
    let screen = '';
    let writes = 0;
    const pump = new OutputPump((o, l) => c.output(t.id, o, l), (d) => { screen += d; writes++; }, { minIntervalMs: 5 });
    const seen: string[] = [];
    c.onOutput((o) => { if (o.id === t.id) { seen.push(o.data); pump.wake(); } });
    pump.wake();
    await waitFor('the task to finish', () => ['merging', 'blocked'].includes(c.tasks.get(t.id)?.status ?? '') , 90000);
    // Merging is not the end of the output: the agent is let go after it and
    // draws its exit screen ("Resume this session with: claude --resume
    // <id>", the id held back ~50 ms by the masking writer). task/output's
    // ended says the log is final; the pump must get there woken by the
    // notifications alone.
    await waitFor('the log to end', async () => (await c.output(t.id, 0, 1)).ended, 60000);
    const all = await readAll(c, t.id);
    await waitFor('the pump to catch up with the final log', async () => {
      await pump.idle();
      return pump.offset === Buffer.byteLength(all);
    });
    pump.dispose();
    assert.equal(screen, all, 'the terminal got every byte once, in order');
    assert.ok(writes >= 1);
    // The notifications' data was skipped by the fast decoder (familiar's key order).
    assert.ok(seen.length > 0 && seen.every((d) => d === ''), 'task/output notifications decoded without their data');
  } finally {
    await c.stop();
    sb.cleanup();
  }
});

test('the pump skips ahead when flooded and never writes more often than asked', async () => {
  // A synthetic log that grows faster than the terminal drains it.
  let log = '';
  const fetch = async (offset: number, limit: number) => {
    log += 'x'.repeat(512 * 1024); // 512 KiB per request round
    const data = log.slice(offset, offset + limit);
    return { data, offset, nextOffset: offset + data.length, size: log.length, truncated: offset + data.length < log.length, ended: false };
  };
  const times: number[] = [];
  let bytes = 0;
  const pump = new OutputPump(fetch, (d) => { times.push(Date.now()); bytes += d.length; },
    { minIntervalMs: 20, floodIntervalMs: 60, pageBytes: 64 * 1024, maxBacklog: 1024 * 1024, floodKeepBytes: 128 * 1024 });
  pump.wake();
  await waitFor('some writes', () => times.length >= 10);
  pump.dispose();
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 18, `writes ${times[i] - times[i - 1]} ms apart`);
  // Once it had to skip, it writes the latest at the flood interval only.
  for (let i = times.length - 5; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 58, `flood-mode writes ${times[i] - times[i - 1]} ms apart`);
  assert.ok(pump.skipped > 0, 'the backlog was skipped');
  assert.ok(bytes < log.length / 2, 'the terminal was not fed the whole flood');
});

test('an idle pump stops asking: a few retries after a wake, none once the log has ended', async () => {
  let log = 'hello';
  let ended = false;
  let fetches = 0;
  const fetch = async (offset: number, limit: number) => {
    fetches++;
    const data = log.slice(offset, offset + limit);
    return { data, offset, nextOffset: offset + data.length, size: log.length, truncated: false, ended };
  };
  let screen = '';
  const pump = new OutputPump(fetch, (d) => { screen += d; }, { minIntervalMs: 1 });
  try {
    pump.wake();
    await pump.idle();
    assert.equal(screen, 'hello');
    assert.equal(fetches, 1, 'a read up to the size is the last');
    // A wake that finds nothing retries a few times (a notification can
    // precede its bytes in the log), then waits for the next wake.
    fetches = 0;
    pump.wake();
    await pump.idle();
    assert.equal(fetches, 1 + 5);
    log += ' world';
    pump.wake();
    await pump.idle();
    assert.equal(screen, 'hello world');
    ended = true;
    fetches = 0;
    pump.wake();
    await pump.idle();
    assert.equal(fetches, 1, 'an ended log is not asked again');
  } finally {
    pump.dispose();
  }
});

test('reconnects after familiar dies and replays missed events after a reload', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  const a = client(sb);
  let b: FamiliarClient | undefined;
  try {
    await a.start();
    const t = await a.request('task/create', { title: 'quick', description: '@@TEXT done quickly' });
    await waitFor('the task to be seen', () => a.tasks.has(t.id));
    const seqAtCreate = a.lastSeq;
    await waitFor('ready to merge', () => a.tasks.get(t.id)?.status === 'merging', 90000);

    // familiar dies: the client says so, reconnects, and has the same tasks.
    const exits: unknown[] = [];
    a.onExit((e) => exits.push(e));
    process.kill(a.pid!, 'SIGKILL');
    await waitFor('the loss to be noticed', () => exits.length > 0);
    await waitFor('reconnected', () => a.state === 'connected' && a.reconnects === 1, 30000);
    assert.equal(a.tasks.get(t.id)?.status, 'merging');
    await a.stop();

    // A new window (as after a reload) that last saw seqAtCreate replays the
    // completion it missed, once.
    b = client(sb, seqAtCreate);
    const completed: [TaskCompletedNotification, { replayed: boolean }][] = [];
    b.onCompleted((x) => completed.push(x));
    await b.start();
    const mine = completed.filter(([x]) => x.id === t.id);
    assert.equal(mine.length, 1, 'one replayed completion');
    assert.equal(mine[0][1].replayed, true);
    assert.equal(b.tasks.get(t.id)?.status, 'merging');
    assert.ok(b.lastSeq > seqAtCreate);
  } finally {
    await a.stop();
    await b?.stop();
    sb.cleanup();
  }
});

test('a task blocked by the API is announced once, as a warning with the actions of its reason', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  const c = client(sb);
  try {
    await c.start();
    // What the extension does with both notifications (extension.ts): an
    // older familiar announces a block with task/updated only, a newer one
    // with task/completed too; either way one warning.
    const ends = new EndAnnouncer();
    const announced: TaskEnd[] = [];
    const completed: TaskCompletedNotification[] = [];
    c.onTask((t) => { const e = ends.updated(t); if (e) announced.push(e); });
    c.onCompleted(([d]) => { completed.push(d); const e = ends.completed(d, c.tasks.get(d.id)); if (e) announced.push(e); });

    const t = await c.request('task/create', { title: 'Refused', description: '@@ERROR 401 invalid x-api-key' });
    const end = await waitFor('the block to be announced', () => announced.find((e) => e.id === t.id), 90000);
    assert.equal(c.tasks.get(t.id)?.status, 'blocked');
    assert.equal(end.status, 'blocked');
    assert.equal(end.success, false);
    assert.equal(end.reason, 'auth');
    const n = endNotice('Refused', end);
    assert.equal(n.level, 'warning');
    assert.match(n.text, /^Familiar · "Refused" is blocked: the API refused its credentials — Invalid API key.*claude auth login/);
    assert.deepEqual(n.actions, ['Run Doctor', 'Retry', 'Open Terminal']);

    // A newer familiar's task/completed of the same end (sent here by hand
    // when this one has none): no second warning.
    if (!completed.some((d) => d.id === t.id)) {
      const fake: TaskCompletedNotification = { seq: c.lastSeq + 1, id: t.id, result: { success: false, summary: '', changedFiles: [], commits: [] }, status: 'blocked', reason: 'auth', detail: end.detail ?? '' };
      assert.equal(ends.completed(fake, c.tasks.get(t.id)), undefined);
    }
    // Retry: a new attempt (a new task) that ends the same way is announced again.
    const retry = await c.request('task/retry', { id: t.id });
    await waitFor('the retry\'s block to be announced', () => announced.find((e) => e.id === retry.id), 90000);
    assert.equal(announced.filter((e) => e.id === t.id).length, 1, 'the first block, once');
    assert.equal(announced.length, 2);
  } finally {
    await c.stop();
    sb.cleanup();
  }
});

test('a follow-up to a finished task goes to its warm claude: the same process, no new start', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  // The settings the extension sends with nothing configured (familiar.*'s
  // defaults): warmAgentSec 600, where familiar's own default is 0.
  const sent = settingsFrom((_key, def) => def);
  assert.equal(sent.warmAgentSec, 600);
  const c = new FamiliarClient({
    familiarPath: bins.familiar, workspaceRoot: sb.repo, env: { ...sb.env, ...model.env }, lastSeq: 0, backoffMs: [50, 100, 200],
    settings: () => sent,
    log: (level, msg) => { if (process.env.FAMILIAR_TEST_LOG) console.error(`[familiar ${level}] ${msg}`); },
  });
  try {
    await c.start();
    const completed: TaskCompletedNotification[] = [];
    const statuses: string[] = [];
    c.onCompleted(([d]) => completed.push(d));
    c.onTask((t) => { if (statuses[statuses.length - 1] !== t.status) statuses.push(t.status); });
    const t = await c.request('task/create', { title: 'Warm', description: 'first words\n@@TEXT First answer.' });
    await waitFor('the first turn', () => completed.find((d) => d.id === t.id && d.result.summary.includes('First answer')), 90000);
    const first = await c.request('task/get', { id: t.id });
    assert.equal(first.status, 'merging');
    const pid = first.agent?.pid;
    assert.ok(pid, `no claude after the first turn: ${JSON.stringify(first.agent)}`);
    process.kill(pid, 0); // the warm claude is there

    // What Continue… sends (extension.ts continueTask).
    statuses.length = 0;
    await c.request('task/send', { id: t.id, text: 'one more thing\n@@TEXT Second answer.' });
    await waitFor('the follow-up\'s answer', () => completed.find((d) => d.id === t.id && d.result.summary.includes('Second answer')), 90000);
    const second = await c.request('task/get', { id: t.id });
    assert.equal(second.agent?.pid, pid, 'the follow-up ran in another claude');
    // merging → running → merging: a new claude would have gone through starting.
    assert.ok(!statuses.includes('starting'), `the follow-up started a claude: ${statuses.join(' → ')}`);
    assert.ok(statuses.includes('running'), `statuses ${statuses.join(' → ')}`);
  } finally {
    await c.stop();
    sb.cleanup();
  }
});

async function readAll(c: FamiliarClient, id: string): Promise<string> {
  let out = '';
  let offset = 0;
  for (;;) {
    const p = await c.output(id, offset, 1 << 20);
    out += p.data;
    offset = p.nextOffset;
    if (p.nextOffset >= p.size) return out;
  }
}

test('the merge queue: followed through queue/updated, and read back by a client that connects after', { skip: skipWithoutClaude }, async () => {
  const sb = sandbox();
  const c = client(sb);
  let late: FamiliarClient | undefined;
  try {
    await c.start();
    const steps: string[] = [];
    c.onQueue(([q]) => steps.push(q.items.map((i) => i.state).join(',')));
    const t = await c.request('task/create', { ...bashTask('queued.txt', 'merged by the queue\\n'), permissionPolicy: { default: 'allow' } });
    await waitFor('ready to merge', () => c.tasks.get(t.id)?.status === 'merging', 90000);
    const st = await c.request('queue/status', {});
    assert.equal(st.defaultVerify, undefined);
    await c.request('queue/merge', { verify: 'test -f queued.txt' });
    const q = await waitFor('the queue done', () => c.queue?.state === 'done' && c.queue, 60000);
    assert.equal(q.items[0].state, 'merged');
    assert.ok(steps.includes('verifying'), `steps seen: ${steps.join(' | ')}`);
    assert.equal(fs.readFileSync(path.join(sb.repo, 'queued.txt'), 'utf8'), 'merged by the queue\n');
    late = client(sb);
    await late.start();
    assert.equal(late.queue?.id, q.id);
    assert.equal(late.queue?.state, 'done');
  } finally {
    await late?.stop();
    await c.stop();
    sb.cleanup();
  }
});
