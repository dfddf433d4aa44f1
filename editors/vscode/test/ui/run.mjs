// UI tests of the extension in a real VS Code (code-server + chromium).
// Usage: node test/ui/run.mjs [scenario ...]   (default: all)
// Scenarios: main (with choice, multi-select and latency), reload, noclaude, control (pause/resume), view (issue 23: review, task view, answers, grants),
// manage (issue 26: reorder, undo countdown, search, clear finished, revoke a grant), queue (issue 25: conflict forecast, Merge All Ready…), load.
// mode, skills, mcp (issue 26: Change Mode…, skills and directives in New Task, MCP servers).
// chat (issue 36: the message box, Stop, Stop and send, both drivers; Enter → model and Stop → turn end figures in test-artifacts/chat.json),
// cards (issue 36: questions answered on their card, accept edits, inline options, a reload with a view open, Open Worktree).
// plan (issue 39: New Plan…, a step edited, Run, the steps' progress, Undo Plan), schema (issue 41: a JSON tasks file's typo squiggled), vsix (issue 41: the built VSIX installed into a clean code-server runs its own familiar; FAMILIAR_VSIX),
// keep (issue 36: keep or discard each file before merging), mention (issue 36: @-mentions reach the model), bigview (issue 36: a 5,000-entry view's open time and the host's event loop while it streams; test-artifacts/bigview.json).
// FAMILIAR_UI_RUNS sets the latency sample count (default 20).

import * as fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { artifacts, daemonPids, extDir, log, paths, percentile, socketClient, startModel, startSession, toastTimes, waitFor, watchToasts } from './harness.mjs';

/** Runs fn in a fresh session; on failure keeps a screenshot and the code-server log. */
async function withSession(name, opts, fn) {
  const s = await startSession(name, opts);
  let failed = false;
  try {
    return await fn(s);
  } catch (err) {
    failed = true;
    await s.shot('FAILED').catch(() => undefined);
    const logs = path.join(s.dir, 'code-server.log');
    if (fs.existsSync(logs)) fs.copyFileSync(logs, path.join(artifacts, `${name}-code-server.log`));
    // The extension's own log (its output channel).
    const find = (dir) => fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('Familiar.log')).map((f) => path.join(dir, String(f))) : [];
    for (const f of find(path.join(s.dir, 'user-data', 'logs'))) fs.copyFileSync(f, path.join(artifacts, `${name}-Familiar.log`));
    // The extension's trace (New Task's steps, questions, ends).
    if (fs.existsSync(s.trace)) fs.copyFileSync(s.trace, path.join(artifacts, `${name}-trace.jsonl`));
    // The background familiar's own log (hooks, screen readings, drops).
    const state = path.join(s.dir, 'state', 'familiar');
    if (fs.existsSync(state)) {
      for (const d of fs.readdirSync(state)) {
        const f = path.join(state, d, 'familiar.log');
        if (fs.existsSync(f)) fs.copyFileSync(f, path.join(artifacts, `${name}-daemon.log`));
      }
    }
    throw err;
  } finally {
    // A daemon close() had to kill fails the scenario, unless it failed
    // already (its own error says more; the kill is logged).
    let closeErr;
    try {
      await s.close();
    } catch (err) {
      closeErr = err;
    }
    s.cleanup();
    if (closeErr && !failed) throw closeErr;
    if (closeErr) log(`${name}: ${closeErr.message}`);
  }
}

/**
 * New Task's form: Escape keeps the draft (New Task brings it back), and a
 * pasted three-line description reaches the task with its three lines.
 */
async function newTaskForm(s) {
  await s.command('Familiar: New Task');
  let f = await s.formFrame();
  await f.locator('#title').fill('Kept draft');
  await f.locator('#description').fill('typed before Escape');
  await s.shot('new-task-form');
  await f.locator('#description').press('Escape');
  await waitFor('the form to close', async () => !(await s.formFrame(0).catch(() => undefined)), 30000, 100);
  await s.command('Familiar: New Task');
  f = await s.formFrame();
  await waitFor('the draft back in the form', async () => (await f.locator('#title').inputValue()) === 'Kept draft', 15000);
  if ((await f.locator('#description').inputValue()) !== 'typed before Escape') throw new Error('the draft lost its description');
  await f.locator('#discard').click();
  await waitFor('the form to close', async () => !(await s.formFrame(0).catch(() => undefined)), 30000, 100);
  const three = 'first line\nsecond line\nthird line';
  await s.newTask('Three lines', three);
  const rpc = await socketClient(s);
  try {
    const { tasks } = await rpc.request('task/list', {});
    const t = tasks.find((x) => x.title === 'Three lines');
    if (!t || t.description !== three) throw new Error(`the description is ${JSON.stringify(t?.description)}, not the three lines`);
  } finally {
    rpc.close();
  }
}

/** The page inside the last task view (a webview: an iframe in an iframe). */
function view(s) {
  return s.page.locator('iframe.webview.ready').last().contentFrame().locator('#active-frame').contentFrame();
}

/** The page inside the task view whose heading is title. */
async function viewOf(s, title, timeout = 30000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const frames = s.page.locator('iframe.webview.ready');
    for (let i = (await frames.count()) - 1; i >= 0; i--) {
      const page = frames.nth(i).contentFrame().locator('#active-frame').contentFrame();
      if (await page.locator('h1', { hasText: title }).count().catch(() => 0)) return page;
    }
    if (Date.now() > deadline) throw new Error(`no task view shows "${title}"`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Opens title's task view with a click on its row, and clicks again when
 * the rows moved under the click: on a quiet machine another task changed
 * group between finding the row and the click, and the click opened that
 * task's view in the preview tab instead.
 */
async function openView(s, title) {
  for (let i = 0; ; i++) {
    await s.treeRow(title).click();
    try {
      return await viewOf(s, title, 5000);
    } catch (err) {
      if (i >= 4) throw err;
    }
  }
}

/**
 * Runs Merge All Ready…: every ready task (all picked), as listed, Merge,
 * and checks the verify command is prefilled with verify before accepting it
 * (or, given, the command instead).
 */
async function mergeAllReady(s, verify, instead) {
  await s.command('Familiar: Merge All Ready…');
  const p = s.page;
  const title = (t) => p.locator('.quick-input-widget .quick-input-title', { hasText: t }).waitFor({ state: 'visible', timeout: 30000 });
  await title('the tasks, in priority order');
  await p.locator('.quick-input-widget .monaco-list-row').first().waitFor({ state: 'visible' });
  await p.locator('.quick-input-widget .quick-input-box input').press('Enter');
  await title('the order');
  await s.pick('As listed');
  await title('how each task goes into main');
  await s.pick('Merge');
  await title('the check before each merge');
  const input = p.locator('.quick-input-widget .quick-input-box input');
  await waitFor('the verify command prefilled', async () => (await input.inputValue()) === verify, 30000, 100);
  await s.shot('merge-all-ready-verify');
  if (instead !== undefined) await input.fill(instead);
  await input.press('Enter');
}

/** The words of the file the mention scenario mentions: found in a request, the file reached the model. */
const mentionMarker = 'MENTIONED-FILE-WORDS-7F3A';
/** Descriptions of the skills scenario's skills: found in a request, the skill reached the model. */
const skillMarkers = { relnotes: 'SKILLMARK-RELNOTES-26', lint: 'SKILLMARK-LINT-26' };

/** The last status word a row's label says, to wait for any of several. */
async function waitRow(s, title, words, timeout = 120000) {
  const sel = words.map((w) => `.monaco-list-row[aria-label^="${title}, ${w}"]`).join(', ');
  await s.page.locator(sel).first().waitFor({ state: 'attached', timeout });
}

/**
 * The host's own part of its worst delay each second: the delay less the
 * time its thread waited for a CPU in that second (at least what its own
 * work, the garbage collector's included, held the loop), as the median,
 * p95, worst and the seconds over 50 ms. Linux only (runWaitMs).
 */
function ownDelay(host) {
  const own = host.filter((l) => l.runWaitMs !== undefined).map((l) => Math.max(0, l.lagMaxMs - l.runWaitMs)).sort((a, b) => a - b);
  if (!own.length) return {};
  return { ownLagMsMedian: percentile(own, 50), ownLagMsP95: percentile(own, 95), ownLagMs: own[own.length - 1], ownOver50ms: own.filter((x) => x > 50).length };
}

const bashTask = (file, text) => `@@TOOL Bash {"command":"printf '${text}\\\\n' > ${file}"}`;

const scenarios = {
  /** New Task → permission notification → Allow → ready → Show changes → Merge → Undo. */
  async main(model) {
    const n = Number(process.env.FAMILIAR_UI_RUNS ?? 20);
    const script = Array.from({ length: n }, (_, i) => `@@TOOL Bash {"command":"touch step-${i + 1}.txt"}`).join('\n') + '\n';
    await withSession('main', { env: model.env, files: { 'latency-script.txt': script } }, async (s) => {
      await s.ready();
      await s.shot('workbench');
      await newTaskForm(s);
      const title = 'Write hello';
      await s.newTask(title, bashTask('hello.txt', 'hello from the agent'));
      await s.treeRow(title).waitFor({ timeout: 60000 });
      const ask = s.toast(`"${title}" asks to run Bash`);
      await ask.waitFor({ timeout: 120000 });
      await s.waitTaskStatus(title, 'waiting');
      await s.shot('permission-notification');
      await s.clickToastButton(`"${title}" asks to run Bash`, 'Allow');
      await s.waitTaskStatus(title, 'merging');
      const ready = `"${title}" is ready to merge`;
      await s.toast(ready).waitFor({ timeout: 60000 });
      await s.shot('ready-to-merge');
      await s.clickToastButton(ready, 'Show Changes');
      // The multi-file diff editor, with both sides read through task/diff.
      await s.page.locator('.tabs-container .tab', { hasText: `Familiar: ${title}` }).first().waitFor({ timeout: 30000 });
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'hello from the agent' }).first().waitFor({ timeout: 30000 });
      await s.shot('show-changes');
      await s.clickToastButton(`"${title}": 1 file changed`, 'Merge…');
      await s.pick('Squash');
      const file = path.join(s.repo, 'hello.txt');
      await waitFor('hello.txt in the main checkout', () => fs.existsSync(file) && fs.readFileSync(file, 'utf8') === 'hello from the agent\n', 30000);
      await s.waitTaskStatus(title, 'merged');
      await s.toast(`merged "${title}"`).waitFor();
      await s.shot('merged');
      await s.clickToastButton(`merged "${title}"`, 'Undo');
      await waitFor('hello.txt gone after undo', () => !fs.existsSync(file), 30000);
      // familiar's warning: what an undo cannot take back.
      await s.toast('cannot undo pushes').waitFor();
      await s.shot('undone');
      await choice(s, model);
      await latency(s);
    });
  },

  /** Issue 36: keep or discard each file before merging — discard one of two files, merge the other. */
  async keep(model) {
    await withSession('keep', { env: model.env }, async (s) => {
      await s.ready();
      const title = 'Write two files';
      await s.newTask(title, `@@TOOL Bash {"command":"printf 'kept\\\\n' > kept.txt; printf 'discarded\\\\n' > discarded.txt"}`);
      const ask = `"${title}" asks to run Bash`;
      await s.toast(ask).waitFor({ timeout: 120000 });
      await s.clickToastButton(ask, 'Allow');
      await s.waitTaskStatus(title, 'merging');
      const ready = `"${title}" is ready to merge`;
      await s.clickToastButton(ready, 'Show Changes');
      await s.page.locator('.tabs-container .tab', { hasText: `Familiar: ${title}` }).first().waitFor({ timeout: 30000 });
      await s.clickToastButton(`"${title}": 2 files changed`, 'Choose Files…');
      const qi = s.page.locator('.quick-input-widget');
      await qi.locator('.quick-input-title', { hasText: `which files of "${title}" go into` }).waitFor({ state: 'visible', timeout: 30000 });
      // Both are kept at first; one click on a row leaves that file out.
      const row = (name) => qi.locator('.monaco-list-row', { hasText: name }).first();
      await row('discarded.txt').waitFor({ state: 'visible' });
      // The row's checkbox, as VS Code draws it (an input, or a custom toggle in newer ones).
      const checked = (name) => row(name).evaluate((r) => {
        const box = r.querySelector('input[type=checkbox]');
        if (box) return box.checked;
        const toggle = r.querySelector('.monaco-custom-toggle');
        if (toggle) return toggle.classList.contains('checked') || toggle.getAttribute('aria-checked') === 'true';
        return r.getAttribute('aria-checked') === 'true';
      });
      if (!(await checked('discarded.txt')) || !(await checked('kept.txt'))) throw new Error('the files are not all kept at first');
      await row('discarded.txt').locator('input[type=checkbox], .monaco-custom-toggle').first().click();
      await waitFor('discarded.txt unchecked', async () => !(await checked('discarded.txt')), 10000, 50);
      if (!(await checked('kept.txt'))) throw new Error('kept.txt is not kept');
      await s.shot('choose-files');
      await qi.locator('.quick-input-box input').press('Enter');
      await s.waitTaskStatus(title, 'merged');
      const kept = path.join(s.repo, 'kept.txt');
      await waitFor('kept.txt in the main checkout', () => fs.existsSync(kept) && fs.readFileSync(kept, 'utf8') === 'kept\n', 30000);
      if (fs.existsSync(path.join(s.repo, 'discarded.txt'))) throw new Error('the discarded file reached the main checkout');
      const toast = s.toast('left out: discarded.txt');
      await toast.waitFor({ timeout: 30000 });
      await s.shot('kept-one');
      // The discarded file is still in the task's branch, as the agent wrote it.
      const git = (...args) => execFileSync('git', args, { cwd: s.repo, encoding: 'utf8' }).trim();
      const branch = git('for-each-ref', '--format=%(refname:short)', 'refs/heads/familiar/');
      if (git('show', `${branch.split('\n')[0]}:discarded.txt`) !== 'discarded') throw new Error(`the task's branch lost discarded.txt (${branch})`);
      // Undo takes the kept file back out.
      await s.clickToastButton('left out: discarded.txt', 'Undo');
      await waitFor('kept.txt gone after undo', () => !fs.existsSync(kept), 30000);
      await s.waitTaskStatus(title, 'merging');
    });
  },

  /**
   * Issue 36: @ in the message box lists the workspace's files; the one
   * taken reaches the model (claude attaches it: its words are in the
   * request); Add Selection attaches the editor's selected lines.
   */
  async mention(model) {
    model.seen = model.requests().length;
    await withSession('mention', { env: model.env, files: { 'notes/marker.txt': `${mentionMarker}\n`, 'notes/other.txt': 'other\n' } }, async (s) => {
      await s.ready();
      await s.openView();
      const title = 'Read what I mention';
      await s.newTask(title, '@@TEXT Ready.');
      await waitRow(s, title, ['done, no changes', 'ready to merge'], 180000);
      const v = await openView(s, title);
      const box = v.locator('#message');
      await waitFor('the message box to take a message', async () => !(await box.isDisabled()), 30000, 100);
      await box.click();
      await box.pressSequentially('Summarise @mark', { delay: 30 });
      const option = v.locator('.mentions .mention', { hasText: 'notes/marker.txt' });
      await option.waitFor({ state: 'visible', timeout: 15000 });
      await s.shot('mention-list');
      await box.press('Enter'); // takes the mention, does not send
      await waitFor('the mention in the box', async () => (await box.inputValue()) === 'Summarise @notes/marker.txt ', 10000, 50);
      await box.press('Shift+Enter');
      await box.pressSequentially('@@TEXT Summarised.', { delay: 10 });
      await v.locator('.mentions').waitFor({ state: 'hidden', timeout: 5000 });
      await box.press('Enter');
      await received(model, 'Summarise @notes/marker.txt');
      await v.locator('#log .item.text', { hasText: 'Summarised.' }).waitFor({ timeout: 180000 });
      const got = model.requests().slice(model.seen).filter((r) => (r.lastUserText ?? '').includes('@notes/marker.txt'));
      if (!got.some((r) => (r.found ?? []).includes(mentionMarker))) throw new Error(`the mentioned file's words never reached the model: ${JSON.stringify(got.map((r) => r.found))}`);
      await s.shot('mention-sent');
      // Add Selection: the lines selected in the editor go into the box, with their file and lines.
      await s.page.keyboard.press('F1');
      const input = s.page.locator('.quick-input-widget .quick-input-box input');
      await input.waitFor({ state: 'visible' });
      await input.fill('notes/other.txt');
      await s.page.locator('.quick-input-widget .monaco-list-row', { hasText: 'other.txt' }).first().waitFor({ state: 'visible' });
      await input.press('Enter');
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'other' }).first().click();
      await s.page.keyboard.press('Control+A');
      await s.page.locator('.tabs-container .tab', { hasText: title }).first().click();
      await v.locator('#attach').click();
      await waitFor('the selection in the box', async () => (await box.inputValue()).startsWith('From notes/other.txt, line 1:\n```'), 15000, 50);
      if (!(await box.inputValue()).includes('\nother\n```')) throw new Error(`the box holds ${JSON.stringify(await box.inputValue())}`);
      await s.shot('selection-attached');
    });
  },

  /**
   * Issue 36 item 6: a 5,000-entry transcript. 2,500 tool calls, a hundred
   * a model step (Glob: read-only, asked of nobody, run at once), stream
   * into the task's open view while the extension host's event-loop delay
   * is sampled each second; then the view is opened afresh and its open
   * time read (the page up to its first paint of every row).
   * FAMILIAR_UI_BIG_CALLS sets the number of calls.
   */
  async bigview(model) {
    // remote.autoForwardPorts off: code-server's extension host scans for
    // ports to forward (about 37 ms of CPU a second on this machine, in the
    // thread measured), which a desktop VS Code on a local folder does not.
    await withSession('bigview', { env: model.env, files: { 'a.md': 'a\n' }, settings: { 'remote.autoForwardPorts': false } }, async (s) => {
      await s.ready();
      await s.openView();
      const rpc = await socketClient(s);
      try {
        const calls = Number(process.env.FAMILIAR_UI_BIG_CALLS ?? 2500);
        const perStep = 100;
        // Read, which claude 2.1.330 has: its Glob answers "No such tool
        // available" (CLAUDE-CLI.md §4.2), and 2,500 failed rows are not what
        // a long task's view holds.
        const steps = Array.from({ length: calls }, (_, i) => `${i % perStep ? '@@ALSO' : '@@TOOL'} Read {"file_path":"a.md"}`);
        const title = 'Five thousand entries';
        await rpc.request('task/create', { title, permissionPolicy: { default: 'allow' }, description: '@@DELAY 3s\n' + steps.join('\n') + '\n@@TEXT Every call made.' });
        await waitRow(s, title, ['running', 'starting'], 180000);
        await s.treeRow(title).click();
        await view(s).locator('#log').waitFor({ timeout: 60000 });
        const from = Date.now();
        await s.waitTaskStatus(title, 'merging', 1800000);
        const to = Date.now();
        await view(s).locator('.item.text', { hasText: 'Every call made.' }).waitFor({ timeout: 120000 });
        const host = s.traceLines().filter((l) => l.ev === 'host' && l.at >= from && l.at <= to);
        const lagMax = host.map((l) => l.lagMaxMs).sort((a, b) => a - b);
        const streaming = { seconds: host.length, lagMaxMsMedian: percentile(lagMax, 50), lagMaxMsP95: percentile(lagMax, 95), lagMaxMs: lagMax[lagMax.length - 1] ?? 0,
          over50ms: lagMax.filter((x) => x > 50).length, cpuMsPerSecMedian: percentile(host.map((l) => l.cpuMs).sort((a, b) => a - b), 50),
          gcMsPerSecMedian: percentile(host.map((l) => l.gcMs ?? 0), 50), gcPauseMaxMs: Math.max(0, ...host.map((l) => l.gcMaxMs ?? 0)),
          gcPausesOver50ms: host.filter((l) => (l.gcMaxMs ?? 0) > 50).length,
          // The host's thread waiting for a CPU (a loaded machine), and the
          // seconds over 50 ms in which it hardly waited: the host's own doing.
          runWaitMsPerSecMedian: percentile(host.map((l) => l.runWaitMs ?? 0), 50),
          ...ownDelay(host), loadavg: os.loadavg() };
        // Followed to its end, the page kept about the last window of rows
        // (300; the oldest go back among the earlier ones past 600), and
        // those come back when asked for.
        const sv = view(s);
        const streamedRows = await sv.locator('#log > .item').count();
        const earlierSaid = (await sv.locator('.earlier button').textContent({ timeout: 5000 }).catch(() => '')) ?? '';
        streaming.rowsDrawn = streamedRows;
        log(`bigview: ${calls} calls streaming into the open view: ${JSON.stringify(streaming)}; "${earlierSaid}"`);
        if (calls > 2 * 300 && (streamedRows > 2 * 300 + 100 || !/earlier entries/.test(earlierSaid))) throw new Error(`the streamed view kept ${streamedRows} rows ("${earlierSaid}"), want at most about 600 and the rest as earlier entries`);
        await s.shot('streamed');
        if (calls > 2 * 300) {
          await sv.locator('.earlier button').evaluate((b) => b.click());
          await waitFor('the trimmed rows back when asked for', async () => (await sv.locator('#log > .item').count()) > streamedRows, 30000, 100);
        }
        // Opened afresh: the tab closed, the row clicked again.
        await s.page.keyboard.press('Control+W');
        await s.page.locator('.tabs-container .tab', { hasText: title }).waitFor({ state: 'detached', timeout: 15000 });
        const before = s.traceLines().length;
        await s.treeRow(title).click();
        const opened = await waitFor('the big task view', () => s.traceLines().slice(before).find((l) => l.ev === 'taskview' && l.entries >= 2 * calls), 120000);
        await view(s).locator('.item.text', { hasText: 'Every call made.' }).waitFor({ timeout: 60000 });
        const fig = { entries: opened.entries, rows: opened.items, openMs: opened.ms, pageMs: opened.pageMs, loadedMs: opened.loadedMs, loadavg: os.loadavg(), streaming };
        log(`bigview: ${opened.entries} entries, ${opened.items} rows, open in ${opened.ms} ms (page up ${opened.pageMs} ms, familiar's answers ${opened.loadedMs} ms; load ${os.loadavg()[0].toFixed(1)})`);
        fs.writeFileSync(path.join(artifacts, 'bigview.json'), JSON.stringify(fig, null, 2));
        await s.shot('opened');
        // The view draws the conversation's end; the earlier rows come as the person scrolls up to them.
        const v = view(s);
        const rows = () => v.locator('#log > .item').count();
        const drawn = await rows();
        await v.locator('.earlier button').scrollIntoViewIfNeeded();
        await waitFor('earlier rows drawn on scrolling up', async () => (await rows()) > drawn, 30000, 100);
        const scrolled = await rows();
        // The row saying how many are left, clicked, draws the next page.
        await v.locator('.earlier button').evaluate((b) => b.click());
        await waitFor('more earlier rows', async () => (await rows()) > scrolled, 30000, 100);
        log(`bigview: ${drawn} rows drawn at first, ${scrolled} after scrolling up, ${await rows()} after a click`);
        await s.shot('earlier');
        // The person stays where they read: the rows put in above do not move the page to the end.
        const where = await v.locator('body').evaluate(() => ({ y: window.scrollY, h: document.body.scrollHeight, vh: window.innerHeight }));
        log(`bigview: after the earlier rows the page is at ${where.y} of ${where.h - where.vh} px; ${await rows()} rows`);
        if (where.y > where.h - where.vh - 2 * where.vh) throw new Error(`the earlier rows moved the page to its end (${where.y} of ${where.h - where.vh} px)`);
      } finally {
        rpc.close();
      }
    });
  },

  /**
   * Issue 41: the linux-x64 VSIX (FAMILIAR_VSIX, made by
   * scripts/platform-vsix.sh as make dist makes it) installed with
   * code-server's --install-extension into a clean profile, familiar.path
   * unset and no familiar on PATH: the extension starts, runs the familiar
   * it carries (the process's own executable, its log's line), and a task
   * made in New Task runs against the scripted model.
   */
  async vsix(model) {
    const vsix = process.env.FAMILIAR_VSIX;
    if (!vsix || !fs.existsSync(vsix)) throw new Error(`FAMILIAR_VSIX (${vsix ?? 'unset'}) names no VSIX: make one with scripts/platform-vsix.sh linux-x64 <familiar> <out.vsix> (.ci/run-vscode does)`);
    // No familiar on PATH: one found there would hide a VSIX that carries none.
    const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((d) => d && !fs.existsSync(path.join(d, 'familiar')));
    await withSession('vsix', { env: { ...model.env, PATH: dirs.join(path.delimiter) }, vsix }, async (s) => {
      const ext = path.join(s.dir, 'extensions');
      const installed = fs.readdirSync(ext).filter((d) => d.startsWith('familiar-dev.familiar-'));
      if (installed.length !== 1) throw new Error(`the extensions dir holds ${JSON.stringify(fs.readdirSync(ext))}, not one familiar`);
      // code-server's record of it: installed from a VSIX.
      const record = JSON.parse(fs.readFileSync(path.join(ext, 'extensions.json'), 'utf8')).find((e) => e.identifier?.id === 'familiar-dev.familiar');
      if (record?.metadata?.source !== 'vsix') throw new Error(`code-server's record of the extension: ${JSON.stringify(record)}`);
      const bundled = fs.realpathSync(path.join(ext, installed[0], 'bin', 'familiar'));
      const version = JSON.parse(execFileSync(bundled, ['version', '--json'], { encoding: 'utf8' })).version;
      log(`vsix: installed ${installed[0]}, bin/familiar mode ${(fs.statSync(bundled).mode & 0o777).toString(8)}, familiar ${version}`);
      await s.ready();
      await s.openView();
      // The familiar processes (the extension's `serve --stdio` and the
      // background familiar it started) run the installed binary.
      const exes = () => fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map((pid) => {
        try {
          return { pid, exe: fs.readlinkSync(`/proc/${pid}/exe`), args: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean) };
        } catch {
          return undefined;
        }
      }).filter((p) => p && path.basename(p.args[0] ?? '') === 'familiar');
      const serve = await waitFor('the extension\'s familiar serve --stdio', () => exes().find((p) => p.args.includes('--stdio')), 60000, 200);
      if (serve.exe !== bundled) throw new Error(`the extension runs ${serve.exe} (${serve.args.join(' ')}), not the VSIX's ${bundled}`);
      const daemons = daemonPids(path.join(s.dir, 'state'));
      if (daemons.length !== 1) throw new Error(`background familiars: ${JSON.stringify(daemons)}`);
      const daemonExe = fs.readlinkSync(`/proc/${daemons[0]}/exe`);
      if (daemonExe !== bundled) throw new Error(`the background familiar runs ${daemonExe}, not the VSIX's ${bundled}`);
      // What the person reads in Familiar: Show Log.
      await s.command('Familiar: Show Log');
      await s.page.locator('.part.panel .view-lines', { hasText: `${bundled} (bundled with the extension): familiar ${version}` }).first().waitFor({ timeout: 30000 });
      const title = 'Hello from the VSIX';
      await s.newTask(title, '@@TEXT The installed extension works.');
      await waitRow(s, title, ['done, no changes', 'ready to merge'], 180000);
      const v = await openView(s, title);
      await v.locator('#log .item.text', { hasText: 'The installed extension works.' }).waitFor({ timeout: 60000 });
      await s.shot('installed');
      await s.command('Extensions: Show Installed Extensions');
      await s.page.locator('.extensions-viewlet .monaco-list-row', { hasText: 'Familiar' }).first().waitFor({ timeout: 60000 });
      await s.shot('extensions');
    });
  },

  /** Issue 36: the task view as a conversation (message box, Stop, Stop and send, both drivers). */
  chat,
  /** Issue 36: questions answered on their card in the conversation; a reload with a view open. */
  cards,

  /** Only the latency part of main (for working on it). */
  async latency(model) {
    const n = Number(process.env.FAMILIAR_UI_RUNS ?? 20);
    const script = Array.from({ length: n }, (_, i) => `@@TOOL Bash {"command":"touch step-${i + 1}.txt"}`).join('\n') + '\n';
    await withSession('latency', { env: model.env, files: { 'latency-script.txt': script } }, async (s) => {
      await s.ready();
      await latency(s);
    });
  },

  /** A window reload while a task waits on a permission loses nothing. */
  async reload(model) {
    await withSession('reload', { env: model.env }, async (s) => {
      await s.ready();
      const title = 'Survive a reload';
      await s.newTask(title, bashTask('reload.txt', 'written after the reload'));
      const ask = `"${title}" asks to run Bash`;
      await s.toast(ask).waitFor({ timeout: 120000 });
      await s.shot('before-reload');
      await s.command('Developer: Reload Window');
      await s.page.waitForEvent('load', { timeout: 60000 }).catch(() => undefined);
      await s.ready();
      // The same question is put again by the new window, from familiar's state.
      await s.toast(ask).waitFor({ timeout: 120000 });
      await s.shot('after-reload');
      await s.clickToastButton(ask, 'Allow');
      await s.waitTaskStatus(title, 'merging');
      await s.shot('finished-after-reload');
    });
  },

  /**
   * Pause and resume from the tree's context menu: the task stops, then goes
   * on in its session and finishes. A task the API refuses is announced.
   */
  async control(model) {
    // The DOM renderer: the terminal's text is in the page (Run Doctor's output).
    await withSession('control', { env: model.env, settings: { 'terminal.integrated.gpuAcceleration': 'off' } }, async (s) => {
      await s.ready();
      const title = 'Hold on';
      await s.newTask(title, bashTask('held.txt', 'written after a pause'));
      const ask = `"${title}" asks to run Bash`;
      await s.toast(ask).waitFor({ timeout: 120000 });
      await s.openView();
      await s.waitTaskStatus(title, 'waiting');
      // Cancel puts the notification away unanswered; Answer brings it back.
      await s.clickToastButton(ask, 'Cancel');
      await s.toastGone(ask);
      await s.waitTaskStatus(title, 'waiting');
      await s.contextMenu(title, 'Answer');
      await s.toast(ask).waitFor({ timeout: 15000 });
      const asked = model.requests().length;
      await s.contextMenu(title, 'Pause');
      await s.waitTaskStatus(title, 'paused', 60000);
      // Pausing settles the question: its notification goes.
      await s.toastGone(ask);
      await s.shot('paused');
      await s.contextMenu(title, 'Resume');
      // The resumed session goes on: it asks again (answered here) or finishes.
      const toasts = s.page.locator('.notifications-toasts .notification-toast', { hasText: ask });
      const before = await toasts.count();
      await waitFor('the resumed task to ask again or finish', async () => {
        // Finished: ready to merge, or done with nothing to merge (the
        // resumed turn may change nothing).
        if (await s.page.locator(`.monaco-list-row[aria-label^="${title}, ready to merge"], .monaco-list-row[aria-label^="${title}, done, no changes"]`).count()) return true;
        if (await toasts.count() > before) {
          await toasts.last().getByRole('link', { name: 'Allow', exact: true }).click();
        }
        return false;
      }, 120000, 250);
      if (model.requests().length <= asked) throw new Error('the resumed session never reached the model');
      await s.shot('finished-after-resume');
      await blocked(s);
    });
  },

  /**
   * Issue 25: two tasks edit the same line of shared.txt, a third adds
   * c.txt. The tree and the task view name the conflict by the other task's
   * title; Merge All Ready… refuses a dirty checkout naming the file, then,
   * with the verify command of the repository's .familiar/config.yaml
   * (prefilled), merges A, hands B back with the conflict (its scripted agent
   * resolves it: the steps after its first "Done." answer the follow-up) and
   * C back with the failed check (its agent adds ok-marker); both merge in
   * the end. The queue's steps show in the view, and one notification says
   * what merged and what went back and why; Undo Queue restores main.
   */
  async schema(model) {
    // Issue 41: a JSON tasks file with a typo gets its squiggle as it is
    // typed (the schema the extension contributes), the Problems panel names
    // the key; the YAML association is contributed for the Red Hat YAML
    // extension (which cannot be installed here).
    const pkg = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'package.json'), 'utf8'));
    const yaml = pkg.contributes.yamlValidation ?? [];
    if (!yaml.some((v) => v.url === './schemas/tasks.schema.json' && v.fileMatch.includes('familiar-tasks.yaml'))) throw new Error(`no YAML association for tasks files: ${JSON.stringify(yaml)}`);
    if (!yaml.some((v) => v.url === './schemas/config.schema.json')) throw new Error('no YAML association for .familiar/config.yaml');
    const typo = '{\n  "tasks": [\n    { "titel": "Fix the login", "description": "After login users land on /home." }\n  ]\n}\n';
    await withSession('schema', { env: model.env, files: { 'familiar-tasks.json': typo } }, async (s) => {
      await s.ready();
      await s.command('Go to File');
      await s.pick('familiar-tasks.json');
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'titel' }).first().waitFor({ timeout: 30000 });
      await s.page.locator('.monaco-editor .squiggly-warning, .monaco-editor .squiggly-error').first().waitFor({ state: 'attached', timeout: 60000 });
      await s.command('View: Focus Problems');
      const problem = s.page.locator('.markers-panel .monaco-list-row', { hasText: /titel|title/ }).first();
      await problem.waitFor({ timeout: 30000 });
      const said = await s.page.locator('.markers-panel').innerText();
      if (!/Property titel is not allowed|Missing property "title"/.test(said)) throw new Error(`the Problems panel says: ${said}`);
      await s.shot('tasks-file-squiggle');
    });
  },
  async plan(model) {
    // Issue 39: New Plan… (the scripted architect answers with two steps, b
    // after a), the plan's view in draft, a step edited and saved, Run, the
    // steps' progress in the tree and the view, main with both, Undo Plan.
    await withSession('plan', { env: model.env, settings: { 'familiar.undoWindowSec': 3600 } }, async (s) => {
      await s.ready();
      await s.openView();
      const rpc = await socketClient(s);
      try {
        await rpc.request('settings/update', { settings: { permissionPolicy: { default: 'allow' } } });
        const before = execFileSync('git', ['rev-parse', 'main'], { cwd: s.repo }).toString().trim();
        const step = (id, title, needs, file) => [`  - id: ${id}`, `    title: ${title}`, `    needs: [${needs}]`, '    description: |',
          `      add ${file}`, `      @@TOOL Bash {"command":"touch ${file}"}`, `      @@TEXT Added ${file}.`];
        const yaml = ['steps:', ...step('a', 'Add a', '', 'plan-a.txt'), ...step('b', 'Add b after a', 'a', 'plan-b.txt')].join('\n');
        const answer = 'Here is the plan.\n```familiar-plan\n' + yaml + '\n```';
        // The goal is the architect's scripted answer, on one line (an input box).
        const goal = '@@TEXT ' + answer.replaceAll('\\', '\\\\').replaceAll('\n', '\\n');
        await s.command('Familiar: New Plan…');
        await s.answerInput(goal, { expectTitle: 'New Plan' });
        let v = await viewOf(s, 'Plan:', 60000);
        await v.locator('.state', { hasText: 'draft: review the steps, then Run' }).waitFor({ timeout: 240000 });
        await v.locator('#graph', { hasText: 'Order: a → b' }).waitFor({ timeout: 30000 });
        await s.shot('plan-draft');
        // Edit a step: its title, saved through plan/update.
        const title = v.locator('input[aria-label="Title of step b"]');
        await title.fill('Add b, after a (edited)');
        await v.locator('button', { hasText: 'Save Changes' }).click();
        await waitFor('the edit saved', async () => {
          const { plans } = await rpc.request('plan/list', {});
          return plans[0]?.steps?.[1]?.title === 'Add b, after a (edited)';
        }, 30000, 200);
        // A need that names no step is refused in words, naming the step and field.
        await v.locator('input[aria-label="Steps that step b needs"]').fill('a, nope');
        await v.locator('button', { hasText: 'Save Changes' }).click();
        await v.locator('#error', { hasText: 'needs "nope", which is not a step of this plan' }).waitFor({ timeout: 30000 });
        await s.shot('plan-refused-edit');
        await v.locator('button', { hasText: 'Discard Changes' }).click();
        await v.locator('button', { hasText: /^Run$/ }).click();
        // The steps in the tree under their plan, and the view following.
        const row = (label) => s.page.locator(`.monaco-list-row[aria-label^="${label}"]`).first();
        await row('Add a, ').waitFor({ state: 'attached', timeout: 60000 });
        await v.locator('.state', { hasText: 'done: 2 of 2 steps merged' }).waitFor({ timeout: 300000 });
        await row('Add b, after a (edited), merged').waitFor({ state: 'attached', timeout: 30000 });
        await s.shot('plan-done', 'plan');
        for (const f of ['plan-a.txt', 'plan-b.txt']) if (!fs.existsSync(path.join(s.repo, f))) throw new Error(`main lacks ${f}`);
        // Undo Plan: both merges taken back, main where it was.
        await v.locator('button', { hasText: 'Undo Plan' }).click();
        const confirm = s.page.locator('.monaco-dialog-box .dialog-buttons a, .monaco-dialog-box .dialog-buttons button', { hasText: 'Undo Plan' }).first();
        await confirm.click({ timeout: 30000 });
        await v.locator('.state', { hasText: 'undone' }).waitFor({ timeout: 120000 });
        const after = execFileSync('git', ['rev-parse', 'main'], { cwd: s.repo }).toString().trim();
        if (after !== before) throw new Error(`main after Undo Plan is ${after}, not ${before}`);
        await s.shot('plan-undone');
      } finally {
        rpc.close();
      }
    });
  },
  async queue(model) {
    const verify = "test ! -f c.txt || test -f ok-marker || { echo 'ok-marker is missing'; exit 1; }";
    await withSession('queue', {
      env: model.env,
      files: { 'shared.txt': 'one\ntwo\nthree\n', '.familiar/config.yaml': `mergeVerify: ${JSON.stringify(verify)}\n` },
      // Undo Queue must still hold for the first merge after the hand-backs' turns on a loaded machine.
      settings: { 'familiar.undoWindowSec': 3600 },
    }, async (s) => {
      await s.ready();
      await s.openView();
      const bash = (command) => `@@TOOL Bash ${JSON.stringify({ command })}`;
      const A = 'Line two says A', B = 'Line two says B', C = 'Add c.txt';
      const rpc = await socketClient(s);
      try {
        const create = (title, priority, steps) => rpc.request('task/create', { title, priority, permissionPolicy: { default: 'allow' }, description: steps.join('\n') });
        await create(A, 3, [bash("printf 'one\\nA\\nthree\\n' > shared.txt"), '@@TEXT Done.']);
        // The steps after "Done." answer the queue's hand-back.
        await create(B, 2, [bash("printf 'one\\nB\\nthree\\n' > shared.txt"), '@@TEXT Done.',
          bash("printf 'one\\nA and B\\nthree\\n' > shared.txt"), '@@TEXT Resolved: line two keeps both.']);
        await create(C, 1, [bash("printf 'C\\n' > c.txt"), '@@TEXT Done.', bash('touch ok-marker'), '@@TEXT Added ok-marker.']);
        for (const t of [A, B, C]) await s.waitTaskStatus(t, 'merging', 240000);
        // The forecast: A and B conflict with each other, by title; C with nothing.
        const row = (label) => s.page.locator(`.monaco-list-row[aria-label^="${label}"]`).first();
        // (Summed up on each task's row, no rows of its own: issue 36.)
        const forecastRow = (title, other) => s.page.locator(`.monaco-list-row[aria-label^="${title}, "][aria-label*="conflicts with “${other}” · "][aria-label*="conflicts with “${other}” in shared.txt"]`).first();
        await forecastRow(A, B).waitFor({ state: 'attached', timeout: 60000 });
        await forecastRow(B, A).waitFor({ state: 'attached', timeout: 60000 });
        const rowsNow = await s.page.locator('.part.sidebar .monaco-list-row').count();
        if (rowsNow > 5) throw new Error(`the tree takes ${rowsNow} rows for a group and three ready tasks`);
        const cRow = row(`${C}, ready to merge, 1 file changed`);
        await cRow.waitFor({ state: 'attached', timeout: 30000 });
        if (/conflict|overlap/.test(await cRow.getAttribute('aria-label'))) throw new Error(`C is forecast to conflict: ${await cRow.getAttribute('aria-label')}`);
        await s.shot('conflicts-forecast');
        const v = await openView(s, A);
        await v.locator('.facts dd', { hasText: `with “${B}” in shared.txt` }).waitFor({ timeout: 30000 });
        await s.shot('task-view-conflicts');

        // A dirty checkout of main: refused, the file named, no absolute path, nothing merged.
        const before = execFileSync('git', ['rev-parse', 'main'], { cwd: s.repo }).toString().trim();
        fs.writeFileSync(path.join(s.repo, 'wip.txt'), 'mine\n');
        // Alone, the refusal's notification shows whole (stacked ones show a line).
        await s.command('Notifications: Clear All Notifications');
        await mergeAllReady(s, verify);
        const refused = s.toast('the merge queue did not start');
        await refused.waitFor({ timeout: 30000 });
        const text = await refused.innerText();
        if (!text.includes('wip.txt') || text.includes(s.repo)) throw new Error(`the refusal says: ${text}`);
        await s.shot('queue-refused-dirty');
        fs.rmSync(path.join(s.repo, 'wip.txt'));
        // A toast stays a toast only among the first few: the ones to come must show.
        await s.command('Notifications: Clear All Notifications');

        await mergeAllReady(s, verify);
        // Its steps in the view: the queue's row, then B handed back with its conflict.
        await row('Merge queue, running').waitFor({ state: 'attached', timeout: 60000 });
        await row(`In the merge queue: ${B}, handed back to its agent: conflicts with main in shared.txt`).waitFor({ state: 'attached', timeout: 180000 });
        await s.shot('queue-running', 'merge-queue');
        const end = s.toast('the merge queue finished');
        await end.waitFor({ timeout: 300000 });
        const said = await end.innerText();
        for (const want of [`Merged into main: “${A}”, “${B}” and “${C}”`, `“${B}” (conflicts with main in shared.txt)`, `“${C}” (the verify command failed)`]) {
          if (!said.includes(want)) throw new Error(`the end notification lacks ${JSON.stringify(want)}: ${said}`);
        }
        await row('Merge queue, finished · 3 of 3 merged').waitFor({ state: 'attached', timeout: 30000 });
        await s.shot('queue-finished');
        const shared = fs.readFileSync(path.join(s.repo, 'shared.txt'), 'utf8');
        if (shared !== 'one\nA and B\nthree\n') throw new Error(`shared.txt on main is ${JSON.stringify(shared)}`);
        for (const f of ['c.txt', 'ok-marker']) if (!fs.existsSync(path.join(s.repo, f))) throw new Error(`main lacks ${f}`);

        // Undo Queue: the three merges taken back, main where it was.
        await s.clickToastButton('the merge queue finished', 'Undo Queue');
        const confirm = s.page.locator('.monaco-dialog-box .dialog-buttons a, .monaco-dialog-box .dialog-buttons button', { hasText: 'Undo Queue' }).first();
        await confirm.click({ timeout: 30000 });
        await s.toast('Undid the merge queue\'s 3 merges into main').waitFor({ timeout: 120000 });
        const after = execFileSync('git', ['rev-parse', 'main'], { cwd: s.repo }).toString().trim();
        if (after !== before) throw new Error(`main after Undo Queue is ${after}, not ${before}`);
        await s.shot('queue-undone');

        // Cancel Queue (the queue row's menu) while A's check runs: A's step
        // ends merged, B and C are left ready, and the notification says so.
        const gate = path.join(s.dir, 'gate');
        await mergeAllReady(s, verify, `while ! test -f ${gate}; do sleep 0.1; done`);
        await row(`In the merge queue: ${A}, verifying`).waitFor({ state: 'attached', timeout: 120000 });
        // The queue row's menu holds the queue's entries, none of a task's:
        // its "queue running" matched theirs, and they acted on the selected task.
        for (const item of ['Pause', 'Cancel', 'Change Mode…', 'Open Task']) {
          if (await menuHas(s, 'Merge queue', item)) throw new Error(`the merge queue row's menu offers ${item}, a task's entry`);
        }
        await s.contextMenu('Merge queue', 'Cancel Queue');
        fs.writeFileSync(gate, '');
        const cancelled = s.toast('the merge queue was cancelled');
        await cancelled.waitFor({ timeout: 120000 });
        const cancelText = await cancelled.innerText();
        for (const want of [`Merged into main: “${A}”`, `Not merged: “${B}” and “${C}”`]) {
          if (!cancelText.includes(want)) throw new Error(`the cancelled queue's notification lacks ${JSON.stringify(want)}: ${cancelText}`);
        }
        await s.shot('queue-cancelled');
      } finally {
        rpc.close();
      }
    });
  },

  /**
   * Issue 26, mode: a task waiting on a permission is switched to auditor
   * from the tree's context menu; the agent goes on in its conversation,
   * told of the switch; its row and its view say so; and its next turn's
   * Write is refused without a question: the model gets an error result
   * and no file is written.
   */
  async mode(model) {
    await withSession('mode', { env: model.env }, async (s) => {
      await s.ready();
      await s.openView();
      const title = 'Switch to auditor';
      await s.newTask(title, '@@TOOL Bash {"command":"touch before-switch.txt"}\n@@TEXT Touched.');
      const ask = `"${title}" asks to run Bash`;
      await s.toast(ask).waitFor({ timeout: 120000 });
      await s.waitTaskStatus(title, 'waiting');
      // The task view offers it too while the task works.
      const live = await openView(s, title);
      await live.locator('.actions button', { hasText: 'Change Mode…' }).first().waitFor({ timeout: 30000 });
      const before = model.requests().length;
      await s.contextMenu(title, 'Change Mode…');
      await s.page.locator('.quick-input-widget .quick-input-title', { hasText: `Change the mode of "${title}"` }).waitFor({ state: 'visible', timeout: 30000 });
      await s.shot('change-mode-pick');
      await s.pick('auditor', 'refused without asking');
      // The row says the mode (a mode other than executor starts its description).
      await s.page.locator(`.monaco-list-row[aria-label^="${title}, "][aria-label*=", auditor · "]`).first().waitFor({ state: 'attached', timeout: 30000 });
      await waitRow(s, title, ['ready to merge', 'done, no changes', 'blocked'], 180000);
      if (!model.requests().slice(before).some((r) => /switched this task to auditor/.test(r.lastUserText))) throw new Error('the model was not told of the switch');
      const v = await openView(s, title);
      await v.locator('.facts dd', { hasText: /^auditor$/ }).first().waitFor({ timeout: 30000 });
      // The Bash that waited on its permission when the switch restarted
      // claude is closed, not pending for ever (no session file holds it).
      await v.locator('details.item.tool.status-failed', { hasText: 'touch before-switch.txt' }).first().waitFor({ timeout: 30000 });
      if (await v.locator('details.item.tool.status-pending, details.item.tool.status-running').count()) throw new Error('a tool call is still pending or running in the task view after the switch');
      await s.shot('auditor-after-switch');
      // The next turn writes: refused without a question.
      const rpc = await socketClient(s);
      try {
        const { tasks } = await rpc.request('task/list', {});
        const t = tasks.find((x) => x.title === title);
        if (t.mode !== 'auditor') throw new Error(`the task's mode is ${t.mode}`);
        const next = model.requests().length;
        await rpc.request('task/send', { id: t.id, text: `Write it down.\n@@TOOL Write ${JSON.stringify({ file_path: 'audit-26.txt', content: 'an auditor must not write this\n' })}\n@@TEXT Tried to write.` });
        await waitFor('the turn after the write', () => model.requests().slice(next).some((r) => (r.toolResults ?? []).length), 180000, 250);
        const refused = model.requests().slice(next).flatMap((r) => r.toolResults ?? []);
        if (!refused.length || !refused.every((r) => r.isError)) throw new Error(`the auditor's write was not refused: ${JSON.stringify(refused).slice(0, 1000)}`);
        log(`mode: the auditor's write was refused: ${refused[0].content.slice(0, 200)}`);
        await waitRow(s, title, ['ready to merge', 'done, no changes', 'blocked'], 180000);
        if (fs.existsSync(path.join(t.worktree.path, 'audit-26.txt'))) throw new Error('the auditor wrote audit-26.txt');
        await s.shot('auditor-write-refused');
      } finally {
        rpc.close();
      }
    });
  },

  /**
   * Issue 26, skills and directives: New Task lists the repository's
   * skills; a profile's default skill is ticked when the profile is chosen;
   * a skill picked besides it and the default both reach the model (their
   * descriptions are in the request). Elevated shows what it allows; a
   * verbose task's view shows its hook calls. A broken skill file is a
   * warning naming the file and its line.
   */
  async skills(model) {
    const skill = (name, desc) => `---\nname: ${name}\ndescription: ${desc}\n---\nDo it well.\n`;
    await withSession('skills', {
      env: model.env,
      files: {
        '.familiar/skills/relnotes/SKILL.md': skill('relnotes', `Writes release notes (${skillMarkers.relnotes})`),
        '.familiar/skills/lint/SKILL.md': skill('lint', `Runs the linters (${skillMarkers.lint})`),
        '.familiar/profiles/writer.md': '---\ndescription: writes docs\nskills: [relnotes]\n---\n{{.Title}}\n\n{{.Description}}\n',
      },
    }, async (s) => {
      await s.ready();
      await s.openView();
      await s.command('Familiar: New Task');
      const f = await s.formFrame();
      await f.locator('#title').fill('Notes with skills');
      await f.locator('#description').fill('@@TEXT Noted.');
      await f.locator('#skill-relnotes').waitFor({ timeout: 30000 });
      if (await f.locator('#skill-relnotes').isChecked()) throw new Error('relnotes is ticked before its profile is chosen');
      await f.locator('#profile').selectOption('writer');
      // The profile's default skill is pre-selected.
      await waitFor('the writer profile\'s default skill ticked', () => f.locator('#skill-relnotes').isChecked(), 15000);
      await f.locator('#skills-hint', { hasText: 'defaults of the profile writer' }).waitFor({ timeout: 15000 });
      await f.locator('#skill-lint').check();
      await f.locator('#skills-hint', { hasText: 'Your choice' }).waitFor({ timeout: 15000 });
      // Elevated says what it allows before the task is created; left off here.
      await f.locator('#directive-elevated').check();
      await f.locator('#elevated-warning', { hasText: 'without asking you' }).waitFor({ timeout: 15000 });
      if (!/deny rule .* still wins/.test(await f.locator('#elevated-warning').textContent())) throw new Error('the elevated warning does not say a deny rule still wins');
      await s.shot('new-task-skills-directives');
      await f.locator('#directive-elevated').uncheck();
      // Verbose: the task view shows the agent's hook calls.
      await f.locator('#directive-verbose').check();
      await f.locator('#create').click();
      await waitFor('the New Task form to close', async () => !(await s.formFrame(0).catch(() => undefined)), 30000, 100);
      await waitRow(s, 'Notes with skills', ['done, no changes', 'ready to merge'], 180000);
      const found = new Set(model.requests().flatMap((r) => r.found ?? []));
      for (const m of [skillMarkers.relnotes, skillMarkers.lint]) if (!found.has(m)) throw new Error(`the skill described "${m}" never reached the model (found: ${[...found].join(', ') || 'none'})`);
      const v = await openView(s, 'Notes with skills');
      await v.locator('#hooks > summary', { hasText: 'Hook calls (' }).click();
      await v.locator('.item.hook summary', { hasText: 'UserPromptSubmit' }).first().waitFor({ timeout: 30000 });
      await v.locator('.item.hook summary', { hasText: 'Stop' }).first().waitFor({ timeout: 30000 });
      await s.shot('verbose-hooks-in-view');
      // A skill file that does not load: a warning naming it and its line.
      fs.mkdirSync(path.join(s.repo, '.familiar/skills/broken'), { recursive: true });
      fs.writeFileSync(path.join(s.repo, '.familiar/skills/broken/SKILL.md'), '---\nname: broken\ndescription: has a mode that is none\nmode: wizard\n---\nbody\n');
      const bad = s.toast('a skill did not load: .familiar/skills/broken/SKILL.md:4: unknown mode');
      await bad.waitFor({ timeout: 60000 });
      await s.shot('skill-error-warning');
    });
  },

  /**
   * Issue 26, MCP: Check MCP Servers says, per server of the setting,
   * whether it can start and why not; Add MCP Server Preset… adds a preset
   * to the setting and checks it; New Task adds a preset to one task and
   * shows its check next to it.
   */
  async mcp(model) {
    await withSession('mcp', {
      env: { ...model.env, GITHUB_PERSONAL_ACCESS_TOKEN: undefined },
      // broken cannot start (no such command); quits starts and exits at once,
      // which only claude (or familiar's probe under the PTY) finds.
      settings: { 'familiar.mcpServers': { broken: { type: 'stdio', command: '/nonexistent/mcp-server' }, quits: { type: 'stdio', command: 'false' } } },
    }, async (s) => {
      await s.ready();
      await s.openView();
      await s.command('Familiar: Check MCP Servers');
      const qi = s.page.locator('.quick-input-widget');
      await qi.locator('.quick-input-title', { hasText: 'MCP servers: 1 of 2 cannot start' }).waitFor({ state: 'visible', timeout: 30000 });
      await qi.locator('.monaco-list-row', { hasText: 'broken' }).filter({ hasText: 'cannot start' }).first().waitFor({ state: 'visible', timeout: 15000 });
      await qi.locator('.monaco-list-row', { hasText: 'quits' }).filter({ hasText: 'ready' }).first().waitFor({ state: 'visible', timeout: 15000 });
      await s.shot('check-mcp-servers');
      await s.page.keyboard.press('Escape');
      await s.command('Familiar: Add MCP Server Preset…');
      await s.pick('filesystem', 'server-filesystem');
      const added = s.toast('added the MCP server filesystem:');
      await added.waitFor({ timeout: 30000 });
      const addedText = await added.textContent();
      if (!/filesystem: (ready|cannot start)/.test(addedText)) throw new Error(`the preset's check is not in words: ${addedText}`);
      await s.shot('preset-added');
      const settings = JSON.parse(fs.readFileSync(path.join(s.repo, '.vscode', 'settings.json'), 'utf8'));
      if (!settings['familiar.mcpServers']?.filesystem || !settings['familiar.mcpServers']?.broken) throw new Error(`the setting is ${JSON.stringify(settings)}`);
      // New Task: a preset for one task, checked as it is added.
      await s.command('Familiar: New Task');
      const f = await s.formFrame();
      await f.locator('#mcp-github').check();
      await f.locator('#mcp-github-check', { hasText: 'github: cannot start' }).waitFor({ timeout: 30000 });
      if (!/GITHUB_PERSONAL_ACCESS_TOKEN/.test(await f.locator('#mcp-github-check').textContent())) throw new Error('the github check does not say what is missing');
      await s.shot('new-task-mcp-preset');
      await f.locator('#discard').click();
      await waitFor('the form to close', async () => !(await s.formFrame(0).catch(() => undefined)), 30000, 100);
      // A server that fails inside claude is said, under the PTY driver too,
      // naming the task by its title (a filter on "claude" hid it before).
      const title = 'Uses MCP';
      await s.newTask(title, '@@TEXT Nothing to do.');
      const quits = s.toast(`"${title}": an MCP server did not start: quits`);
      await quits.waitFor({ timeout: 120000 });
      // Expanded, a toast among others shows its whole text (best effort: only the screenshot needs it).
      await quits.hover();
      await quits.locator('.codicon-notifications-expand').first().click({ timeout: 5000 }).catch(() => undefined);
      await s.shot('mcp-failure-inside-claude');
      await waitRow(s, title, ['done, no changes', 'ready to merge'], 180000);
    });
  },

  /** A folder without git is offered git init; a missing claude warns with actions; Run Doctor shows its report. */
  async noclaude() {
    await withSession('noclaude', {
      gitRepo: false,
      env: { FAMILIAR_CLAUDE: '/nonexistent/claude', PATH: pathWithout('claude') },
      settings: { 'terminal.integrated.gpuAcceleration': 'off' },
    }, async (s) => {
      await s.ready(/Familiar/);
      const notGit = 'is not a git repository';
      await s.toast(notGit).waitFor({ timeout: 60000 });
      await s.shot('not-a-git-repository');
      await s.clickToastButton(notGit, 'git init');
      await waitFor('.git', () => fs.existsSync(path.join(s.repo, '.git')), 30000);
      const warn = 'Agents cannot start until it is installed';
      await s.toast(warn).waitFor({ timeout: 60000 });
      await s.shot('claude-missing');
      await s.clickToastButton(warn, 'Run Doctor');
      // No claude: doctor finds a problem.
      await doctorTerminal(s, /doctor found problems/);
      await s.shot('doctor-output');
    });
  },

  /**
   * Issue 23: deciding with the facts and the task view. Review… on a Write
   * opens the proposed file in the diff editor and Allow writes exactly it;
   * the next queued task reads #1; the task view shows the text, both tool
   * rows with their status, the edit's diff and the cost, and is complete
   * after a window reload; a prose question's suggested answer is sent by a
   * click, and Mark done makes a task ready to merge; Allow Always names its
   * rules and the exact one grants only that file; a 200 KB tool result
   * opens whole; a stream task's terminal shows words, not JSON; and a
   * 500-entry transcript's open time.
   */
  async view(model) {
    await withSession('view', {
      env: model.env,
      // One at a time: a second task waits in the queue (#1).
      settings: { 'familiar.maxConcurrent': 1, 'terminal.integrated.gpuAcceleration': 'off' },
    }, async (s) => {
      await s.ready();
      await s.openView();
      const rpc = await socketClient(s);
      try {
        const content = '# Notes\nfirst line from the agent\n';
        const notes = await rpc.request('task/create', { title: 'Notes', description: [
          `@@TOOL Write ${JSON.stringify({ file_path: 'notes.md', content })}`,
          '@@TOOL Bash {"command":"touch ran.txt"}',
          '@@TEXT Wrote **notes.md** with two lines.',
        ].join('\n') });
        const ask = '"Notes" asks to write notes.md';
        await s.toast(ask).waitFor({ timeout: 120000 });
        // The next task queues behind it, and reads #1 (the server counts from 1).
        await rpc.request('task/create', { title: 'Which name', description: '@@TEXT I can name it two ways:\\n\\n- notes.md\\n- readme.md\\n\\nWhich name do you prefer?' });
        await s.page.locator('.monaco-list-row[aria-label^="Which name, queued, #1 in queue"]').first().waitFor({ timeout: 30000 });
        await s.shot('permission-write-and-queue');
        // Review…: the diff editor with the file as proposed; Allow comes back.
        await s.clickToastButton(ask, 'Review…');
        const reviewTab = s.page.locator('.tabs-container .tab', { hasText: 'notes.md' }).first();
        await reviewTab.waitFor({ timeout: 30000 });
        await s.page.locator('.monaco-diff-editor .view-lines', { hasText: 'first line from the agent' }).first().waitFor({ timeout: 30000 });
        // Its tab names the file as the task sees it, never by an absolute path.
        const tabTitle = (await reviewTab.innerText()).trim();
        if (tabTitle.includes(s.dir) || /(^|\s)\/\w/.test(tabTitle)) throw new Error(`the Review… tab's title shows an absolute path: ${tabTitle}`);
        await s.shot('review-write-diff');
        await s.clickToastButton(ask, 'Allow');
        const bash = '"Notes" asks to run Bash: touch ran.txt';
        await s.clickToastButton(bash, 'Allow');
        await s.waitTaskStatus('Notes', 'merging');
        // Its last message is Markdown (**notes.md**): the notification shows it plain.
        const ready = s.toast('"Notes" is ready to merge');
        await ready.waitFor({ timeout: 60000 });
        const readyText = await ready.innerText();
        if (!readyText.includes('Wrote notes.md with two lines') || /\*\*|`/.test(readyText)) throw new Error(`the ready notification shows Markdown: ${readyText}`);
        await s.shot('ready-plain-text');
        const { worktree } = await rpc.request('task/get', { id: notes.id });
        const written = fs.readFileSync(path.join(worktree.path, 'notes.md'), 'utf8');
        if (written !== content) throw new Error(`Allow wrote ${JSON.stringify(written)}, not the reviewed ${JSON.stringify(content)}`);

        // The task view: text, tool rows with status, the edit's diff, the cost.
        await openView(s, 'Notes');
        const checkView = async () => {
          const v = await viewOf(s, 'Notes');
          await v.locator('.item.prompt', { hasText: 'notes.md' }).first().waitFor({ state: 'attached', timeout: 30000 });
          await v.locator('.item.text', { hasText: 'with two lines' }).waitFor({ timeout: 30000 });
          await v.locator('.item.tool.status-completed', { hasText: 'notes.md' }).first().waitFor({ timeout: 30000 });
          await v.locator('.item.tool.status-completed', { hasText: 'touch ran.txt' }).first().waitFor({ timeout: 30000 });
          await v.locator('.diff .add', { hasText: 'first line from the agent' }).waitFor({ timeout: 30000 });
          await v.locator('.item.text strong', { hasText: 'notes.md' }).first().waitFor({ timeout: 30000 });
          await v.locator('.facts .cost', { hasText: 'tokens in' }).waitFor({ timeout: 30000 });
          await v.locator('.state', { hasText: 'ready to merge' }).waitFor({ timeout: 30000 });
          // The worktree (under $XDG_DATA_HOME, far from the repository) shown
          // short; the whole path in its tooltip.
          const wt = v.locator('.facts dd[title]').first();
          await wt.waitFor({ timeout: 30000 });
          const shown = await wt.innerText();
          if ((await wt.getAttribute('title')) !== worktree.path || shown.includes(s.dir) || !shown.includes(path.basename(worktree.path))) {
            throw new Error(`the task view's worktree shows ${JSON.stringify(shown)}, tooltip ${JSON.stringify(await wt.getAttribute('title'))}; the path is ${worktree.path}`);
          }
          return wt;
        };
        const wtFact = await checkView();
        await s.shot('task-view', 'task-view');
        // Copy puts the whole path on the clipboard.
        await wtFact.locator('button.copy').click();
        await waitFor('the worktree\'s path on the clipboard', async () => (await s.page.evaluate(() => navigator.clipboard.readText()).catch(() => '')) === worktree.path, 15000, 200);
        // The edit's row opens its diff in VS Code's diff editor.
        await (await viewOf(s, 'Notes')).locator('.diff button', { hasText: 'Open in diff editor' }).first().click();
        await s.page.locator('.monaco-diff-editor .view-lines', { hasText: 'first line from the agent' }).first().waitFor({ timeout: 30000 });
        // The task view again, then a window reload: it comes back complete.
        await (await openView(s, 'Notes')).locator('.item.text', { hasText: 'with two lines' }).waitFor({ timeout: 30000 });
        rpc.close();
        await s.command('Developer: Reload Window');
        await s.page.waitForEvent('load', { timeout: 60000 }).catch(() => undefined);
        await s.ready();
        await checkView();
        await s.shot('task-view-after-reload');
      } finally {
        rpc.close();
      }
      const rpc2 = await socketClient(s);
      try {
        // The queued prose question ran meanwhile: a click on a suggested answer sends its words.
        const which = '"Which name" asks:';
        const toast = s.toast(which);
        await toast.waitFor({ timeout: 120000 });
        await s.shot('prose-question-choices');
        await toast.getByRole('link', { name: 'readme.md', exact: true }).click();
        await waitFor('the suggested answer to reach the model', () => model.requests().some((r) => r.lastUserText === 'readme.md'), 60000);
        // Mark done: a task that only reported goes to ready to merge.
        await rpc2.request('task/create', { title: 'Report', description: '@@TEXT I checked everything; it all works.\\n\\nShould I also add a test?' });
        const report = '"Report" asks:';
        await s.toast(report).waitFor({ timeout: 120000 });
        await s.clickToastButton(report, 'Mark done');
        await s.waitTaskStatus('Report', 'merging');

        // Allow Always names its rules; the exact one grants only that file.
        await rpc2.request('task/create', { title: 'Docs', description: [
          `@@TOOL Write ${JSON.stringify({ file_path: 'docs/a.md', content: 'a\n' })}`,
          `@@TOOL Write ${JSON.stringify({ file_path: 'docs/b.md', content: 'b\n' })}`,
        ].join('\n') });
        const docA = '"Docs" asks to write docs/a.md';
        await s.clickToastButton(docA, 'Allow Always…');
        const rows = s.page.locator('.quick-input-widget .monaco-list-row');
        await rows.filter({ hasText: /Always allow Edit\(/ }).first().waitFor({ timeout: 15000 });
        await s.shot('allow-always-rules');
        const exact = await rows.filter({ hasText: 'docs/a.md' }).count();
        if (!exact) throw new Error('no exact-file rule offered for docs/a.md');
        await rows.filter({ hasText: 'docs/a.md)' }).first().click();
        await s.pick('This task');
        // docs/b.md is not covered by the exact grant: it asks again.
        await s.clickToastButton('"Docs" asks to write docs/b.md', 'Allow');
        await s.waitTaskStatus('Docs', 'merging');

        // A 200 KB tool result, opened whole from the task view.
        await rpc2.request('task/create', { title: 'Big output', description: '@@TOOL Bash {"command":"head -c 200000 /dev/zero | tr \'\\\\0\' x"}', permissionPolicy: { default: 'allow' } });
        await s.waitTaskStatus('Big output', 'merging');
        await s.treeRow('Big output').click();
        const v = view(s);
        await v.locator('.item.tool summary').first().click();
        await v.locator('button', { hasText: 'Open the whole result' }).click();
        const whole = await waitFor('the whole result', () => s.traceLines().find((l) => l.ev === 'wholeText'), 30000);
        if (whole.bytes < 200000) throw new Error(`the whole result was ${whole.bytes} bytes`);
        log(`view: whole tool result ${whole.bytes} bytes`);
        await s.shot('whole-result');

        // A stream task's terminal: its conversation in words, no JSON lines.
        await rpc2.request('task/create', { title: 'Streamed', driver: 'stream', permissionPolicy: { default: 'allow' },
          description: '@@TOOL Bash {"command":"echo streaming"}\n@@TEXT Streaming words to the terminal. All done here.' });
        await s.waitTaskStatus('Streamed', 'merging');
        await s.contextMenu('Streamed', 'Open Terminal');
        await s.page.locator('.xterm-rows', { hasText: 'All done here.' }).first().waitFor({ timeout: 30000 });
        const screen = await s.page.locator('.xterm-rows').last().innerText();
        if (/"type":\s*"/.test(screen)) throw new Error('the stream task\'s terminal shows JSON lines');
        await s.shot('stream-terminal');

        // A 500-entry transcript: the task view's open time. Ten tool calls
        // a model turn (@@ALSO), as a model calls them: the transcript is as
        // long, the model round trips a tenth (one a call took 2-5 min here
        // under load). 240 calls: a call and its end each, a turn's usage,
        // the prompt and the answer make 506 entries.
        const steps = Number(process.env.FAMILIAR_UI_VIEW_STEPS ?? 240);
        await rpc2.request('task/create', { title: 'Long', permissionPolicy: { default: 'allow' },
          description: Array.from({ length: steps }, (_, i) => `${i % 10 ? '@@ALSO' : '@@TOOL'} Bash {"command":"echo step ${i + 1}"}`).join('\n') + '\n@@TEXT Done with every step.' });
        await s.waitTaskStatus('Long', 'merging', 900000);
        await s.treeRow('Long').click();
        const opened = await waitFor('the long task view', () => s.traceLines().filter((l) => l.ev === 'taskview').find((l) => l.entries >= 2 * steps), 60000);
        log(`view: ${opened.entries} transcript entries, ${opened.items} rows shown in ${opened.ms} ms (page up ${opened.pageMs} ms, familiar's answers ${opened.loadedMs} ms; load ${os.loadavg()[0].toFixed(1)})`);
        fs.writeFileSync(path.join(artifacts, 'taskview.json'), JSON.stringify({ entries: opened.entries, rows: opened.items, openMs: opened.ms, pageMs: opened.pageMs, loadedMs: opened.loadedMs, loadavg: os.loadavg() }, null, 2));
        await s.shot('long-task-view');

        // The extension host's event-loop delay while a task streams text at
        // full speed into an open task view (the stream driver's deltas).
        // The model waits 5 s before it answers, so the view is open before
        // the text comes: on a quiet machine the whole stream takes about a
        // second, over before the tree showed the task running.
        const words = Number(process.env.FAMILIAR_UI_STREAM_WORDS ?? 20000);
        await rpc2.request('task/create', { title: 'Fast stream', driver: 'stream', permissionPolicy: { default: 'allow' },
          description: `@@DELAY 5s\n@@PACE 1ms\n@@TEXT ${'word '.repeat(words)}the end.` });
        await s.page.locator('.monaco-list-row[aria-label^="Fast stream, running"]').first().waitFor({ timeout: 120000 });
        const from = Date.now();
        await s.treeRow('Fast stream').click();
        await s.waitTaskStatus('Fast stream', 'merging', 300000);
        const to = Date.now();
        await view(s).locator('.item.text', { hasText: 'the end.' }).waitFor({ timeout: 60000 });
        const host = s.traceLines().filter((l) => l.ev === 'host' && l.at >= from && l.at <= to);
        const lag = host.map((l) => l.lagP99Ms).sort((a, b) => a - b);
        const fig = { seconds: host.length, lagP99MsMedian: percentile(lag, 50), lagP99MsMax: lag[lag.length - 1] ?? 0, lagMaxMs: Math.max(0, ...host.map((l) => l.lagMaxMs)),
          cpuMsPerSecMedian: percentile(host.map((l) => l.cpuMs).sort((a, b) => a - b), 50), loadavg: os.loadavg() };
        log(`view: streaming ${words} words: ${JSON.stringify(fig)}`);
        fs.writeFileSync(path.join(artifacts, 'taskview-stream.json'), JSON.stringify(fig, null, 2));
        await s.shot('fast-stream-view');
      } finally {
        rpc2.close();
      }
    });
  },

  /**
   * Issue 26's queue, history, undo and grant controls: Move Up puts the
   * second of two queued tasks first and they start in that order; a task
   * allowed everything brings the warning before autonomy; an undo says it
   * cannot take back a push; the undo countdown (undoWindowSec 60) shows in
   * the tree and the task view, and when it ends the Undo item goes with no
   * word from familiar; Search Tasks… finds a done task by its words;
   * Clear Finished takes the finished rows away; a repository grant revoked
   * in Permission Grants… is asked again; Remove takes a row away; a
   * queued task paused is held in the queue until resumed; 53 finished
   * tasks show 50 and "Show more…"; Show Archived… brings a cleared one
   * back.
   */
  async manage(model) {
    await withSession('manage', {
      env: model.env,
      // One at a time: the tasks behind the first wait in the queue. An undo
      // window of a minute: long enough for the steps while it holds on a
      // loaded machine, short enough to wait for its end.
      settings: { 'familiar.maxConcurrent': 1, 'familiar.undoWindowSec': 60 },
    }, async (s) => {
      await s.ready();
      await s.openView();
      const rpc = await socketClient(s);
      // In the side bar: a quick pick's rows (Show Archived…) are list rows too.
      const row = (title, rest = '') => s.page.locator(`.part.sidebar .monaco-list-row[aria-label^="${title}, ${rest}"]`).first();
      try {
        // The queue: Blocker holds the one slot (it waits on a permission).
        await rpc.request('task/create', { title: 'Blocker', description: bashTask('block.txt', 'blocking') });
        const ask = '"Blocker" asks to run Bash';
        await s.toast(ask).waitFor({ timeout: 120000 });
        const first = await rpc.request('task/create', { title: 'First queued', description: '@@TEXT First one done.' });
        const second = await rpc.request('task/create', { title: 'Second queued', description: '@@TEXT Second one done.' });
        await row('Second queued', 'queued, #2 in queue').waitFor({ timeout: 30000 });
        log(`manage: queued row reads "${await row('Second queued').getAttribute('aria-label')}"`);
        await s.contextMenu('Second queued', 'Move Up');
        await row('Second queued', 'queued, #1 in queue').waitFor({ timeout: 30000 });
        await row('First queued', 'queued, #2 in queue').waitFor({ timeout: 30000 });
        await s.shot('moved-up');
        await s.clickToastButton(ask, 'Allow');
        await s.waitTaskStatus('First queued', 'merging', 180000);
        const [a, b] = await Promise.all([first, second].map((t) => rpc.request('task/get', { id: t.id })));
        if (!(Date.parse(b.startedAt) < Date.parse(a.startedAt))) throw new Error(`Second queued started at ${b.startedAt}, not before First queued (${a.startedAt})`);

        // Allowed everything: the warning before autonomy, with its setting.
        const undoMe = await rpc.request('task/create', { title: 'Undo me', permissionPolicy: { default: 'allow' }, description: bashTask('undo.txt', 'to be undone') });
        const autonomy = 'The permission policy\'s default is allow';
        await s.toast(autonomy).waitFor({ timeout: 60000 });
        await s.toast(autonomy).getByRole('button', { name: 'Open Setting', exact: true }).waitFor({ timeout: 15000 });
        await s.shot('autonomy-warning');
        await s.waitTaskStatus('Undo me', 'merging', 180000);
        await rpc.request('task/merge', { id: undoMe.id, strategy: 'squash' });
        await s.page.locator('.monaco-list-row[aria-label^="Undo me, merged"][aria-label*="undo for"]').first().waitFor({ timeout: 30000 });
        await s.contextMenu('Undo me', 'Undo');
        await s.toast('cannot undo pushes').waitFor({ timeout: 30000 });
        await row('Undo me', 'ready to merge').waitFor({ timeout: 30000 });
        await s.shot('undo-push-warning');
        // Back by undo, as the person just asked: not announced ready to merge again.
        const ends = s.traceLines().filter((e) => e.ev === 'end' && e.task === undoMe.id);
        log(`manage: Undo me's ends: ${JSON.stringify(ends.map((e) => e.text))}`);
        if (ends.length !== 1) throw new Error(`"Undo me" announced ${ends.length} times: ${ends.map((e) => e.text).join(' | ')}`);

        // The countdown, and its end with nothing from familiar.
        const count = await rpc.request('task/create', { title: 'Count down', permissionPolicy: { default: 'allow' }, description: bashTask('count.txt', 'kept') });
        await s.waitTaskStatus('Count down', 'merging', 180000);
        await rpc.request('task/merge', { id: count.id, strategy: 'squash' });
        await s.page.locator('.monaco-list-row[aria-label^="Count down, merged"][aria-label*="undo for"]').first().waitFor({ timeout: 30000 });
        let v = await openView(s, 'Count down');
        const left = v.locator('.facts dd', { hasText: /possible for \d+:\d\d more/ });
        await left.waitFor({ timeout: 15000 });
        // It counts down between task/updated (familiar sends none meanwhile).
        const was = await left.innerText();
        await waitFor('the task view\'s undo time to count down', async () => (await left.innerText().catch(() => was)) !== was, 15000, 200);
        await s.shot('undo-countdown');
        if (!(await menuHas(s, 'Count down', 'Undo'))) throw new Error('no Undo item while the undo holds');
        // Its row is redrawn each second while it counts down (in seconds,
        // under a minute); a context menu entry clicked then reaches the
        // command with its row, not the selected one (another task's, here)
        // nor none. A whole-tree redraw made VS Code forget the rows'
        // elements until the tree was listed again, and an entry landing
        // then ran with none and took the selected task.
        await waitFor('Count down\'s undo to count in seconds', async () => /undo for \d+s/.test(await row('Count down').getAttribute('aria-label').catch(() => '') ?? ''), 60000, 200);
        // At least 8 times, and on until the row has been redrawn twice (a
        // fast machine could do 8 within one second's text).
        const seen = new Set([await row('Count down').getAttribute('aria-label')]);
        let i = 0;
        for (; i < 8 || seen.size < 3; i++) {
          if (i >= 40) throw new Error(`Count down's row was redrawn ${seen.size - 1} times in ${i} menus: ${[...seen].join(' | ')}`);
          await openView(s, 'Undo me');
          await s.page.locator('.tabs-container .tab.active', { hasText: 'Undo me' }).first().waitFor({ timeout: 15000 });
          await s.contextMenu('Count down', 'Open Task');
          await s.page.locator('.tabs-container .tab.active', { hasText: 'Count down' }).first().waitFor({ timeout: 15000 });
          seen.add(await row('Count down').getAttribute('aria-label'));
        }
        log(`manage: Count down's menu ${i} times while its row read ${[...seen].map((l) => JSON.stringify(l)).join(', ')}`);
        v = await viewOf(s, 'Count down');
        log(`manage: counting down: "${await row('Count down').getAttribute('aria-label')}"`);
        await s.page.locator('.monaco-list-row[aria-label^="Count down, merged"]:not([aria-label*="undo for"])').first().waitFor({ timeout: 150000 });
        await v.locator('.facts dd', { hasText: /possible for/ }).waitFor({ state: 'detached', timeout: 15000 });
        if (await menuHas(s, 'Count down', 'Undo')) throw new Error('Undo still offered after undoableUntil');
        await s.shot('undo-ended');

        // Search Tasks…: the words of a done task, created today.
        await s.command('Familiar: Search Tasks…');
        await s.answerInput('second one', { expectTitle: 'Search Tasks (1/2)' });
        await s.pick('Today');
        await s.page.locator('.monaco-list-row[aria-label^="\\"second one\\" · today"]').first().waitFor({ timeout: 30000 });
        await row('Second queued').waitFor({ timeout: 30000 });
        if (await row('First queued').count()) throw new Error('the search shows First queued, which does not have the words');
        await s.shot('search-done');
        await s.page.locator('.monaco-list-row[aria-label^="\\"second one\\""]').first().click();
        await row('First queued').waitFor({ timeout: 30000 });

        // Clear Finished: the finished rows go to the archive.
        await s.command('Familiar: Clear Finished');
        await row('First queued').waitFor({ state: 'detached', timeout: 30000 });
        await row('Count down').waitFor({ state: 'detached', timeout: 30000 });
        const archive = await rpc.request('task/list', { archived: 'only' });
        if (!archive.tasks.some((t) => t.title === 'First queued')) throw new Error('First queued is not in the archive');
        await s.shot('cleared');

        // A repository grant, revoked: the next task asks again.
        await rpc.request('task/create', { title: 'Grant it', description: '@@TOOL Bash {"command":"touch granted.txt"}' });
        const g = '"Grant it" asks to run Bash';
        await s.clickToastButton(g, 'Allow Always…');
        const rows = s.page.locator('.quick-input-widget .monaco-list-row');
        await rows.filter({ hasText: /Always allow Bash\(/ }).first().waitFor({ timeout: 15000 });
        await rows.filter({ hasText: /Always allow Bash\(/ }).first().click();
        await s.pick('This repository');
        await s.waitTaskStatus('Grant it', 'merging');
        const granted = (await rpc.request('policy/list', {})).grants.filter((x) => x.scope === 'repository');
        if (!granted.length) throw new Error('no repository grant after Allow Always for this repository');
        await s.command('Familiar: Permission Grants…');
        const grantRow = rows.filter({ hasText: granted[0].rule }).first();
        await grantRow.waitFor({ timeout: 15000 });
        await s.shot('grants');
        await grantRow.click();
        await rows.filter({ hasText: 'Revoke' }).first().click();
        await waitFor('the grant revoked', async () => !(await rpc.request('policy/list', {})).grants.some((x) => x.scope === 'repository'), 15000, 200);
        await rpc.request('task/create', { title: 'Asked again', description: '@@TOOL Bash {"command":"touch granted.txt"}' });
        await s.toast('"Asked again" asks to run Bash').waitFor({ timeout: 120000 });
        await s.shot('asked-again');

        // Remove takes the row away: the task goes to the archive.
        await s.contextMenu('Blocker', 'Remove');
        await s.page.locator('.monaco-dialog-box .monaco-button', { hasText: /^Remove$/ }).first().click();
        await row('Blocker').waitFor({ state: 'detached', timeout: 30000 });
        if (!(await rpc.request('task/list', { archived: 'only' })).tasks.some((t) => t.title === 'Blocker')) throw new Error('the removed Blocker is not in the archive');

        // A queued task paused from the tree is held in the queue, and Resume queues it again.
        const hold = await rpc.request('task/create', { title: 'Hold me', description: '@@TEXT held' });
        await row('Hold me', 'queued').waitFor({ timeout: 30000 });
        await s.contextMenu('Hold me', 'Pause');
        await row('Hold me', 'paused, held in the queue').waitFor({ timeout: 30000 });
        await s.shot('held-in-queue');
        await s.contextMenu('Hold me', 'Resume');
        await row('Hold me', 'queued').waitFor({ timeout: 30000 });
        const old = [hold.id];
        for (let i = 1; i <= 52; i++) old.push((await rpc.request('task/create', { title: `Old ${i}`, description: '@@TEXT old' })).id);
        for (const id of old) await rpc.request('task/cancel', { id });
        // Paging: of 53 finished (cancelled) tasks the latest 50 show, then
        // "Show more…" (the tree draws only the rows in view: End goes to
        // the group's last row).
        const more = s.page.locator('.monaco-list-row[aria-label^="Show more…"]').first();
        await waitFor('"Show more…" under Cancelled', async () => {
          await s.page.locator('.monaco-list-row[aria-label^="Cancelled ("]').first().click();
          await s.page.keyboard.press('End');
          return (await more.count()) > 0;
        }, 60000, 500);
        // The last cancels may still be on their way: their count comes with them.
        await waitFor('"Show more…" to name the 3 older tasks', async () => /3 older tasks/.test(await more.getAttribute('aria-label').catch(() => '')), 30000, 200)
          .catch(async (err) => { throw new Error(`${err.message}: it reads "${await more.getAttribute('aria-label').catch(() => '?')}"`); });
        await s.shot('show-more');
        await more.click();
        await waitFor('the oldest task after Show more…', async () => {
          await s.page.keyboard.press('End');
          return (await row('Hold me').count()) > 0 && (await more.count()) === 0;
        }, 30000, 500);

        // Clear Finished takes them away; Show Archived… brings one back.
        await s.command('Familiar: Clear Finished');
        await row('Old 7').waitFor({ state: 'detached', timeout: 30000 });
        await s.command('Familiar: Show Archived…');
        const input = s.page.locator('.quick-input-widget .quick-input-box input');
        await input.waitFor({ state: 'visible' });
        await input.fill('Old 7');
        const pickRow = rows.filter({ hasText: 'Old 7' }).first();
        await pickRow.waitFor({ timeout: 15000 });
        await s.shot('archive');
        await pickRow.locator('input[type=checkbox], .monaco-checkbox').first().click();
        await input.press('Enter');
        await row('Old 7', 'cancelled').waitFor({ timeout: 30000 });
        await s.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 15000 });
        await s.shot('unarchived');
      } finally {
        rpc.close();
      }
    });
  },

  /** Tree click latency, idle vs 30 tasks with one flooding its terminal at ~20 MB/s. */
  async load(model) {
    const floodDir = fs.mkdtempSync(path.join(artifacts, '.flood-'));
    const agentNice = process.env.FAMILIAR_UI_AGENT_NICE ? Number(process.env.FAMILIAR_UI_AGENT_NICE) : undefined;
    try {
      await withSession('load', {
        // The fake model's key: familiar refuses to start an agent without credentials.
        env: { ...model.env, FAMILIAR_CLAUDE: path.join(extDir, 'test/ui/flood.sh'), FAKEAGENT: paths.fakeagent, FLOOD_DIR: floodDir },
        // FAMILIAR_UI_AGENT_NICE compares against another niceness (0: the agents compete as equals).
        settings: { 'familiar.maxConcurrent': 32, ...(agentNice !== undefined ? { 'familiar.agentNice': agentNice } : {}) },
      }, (s) => load(s, floodDir, agentNice ?? 10));
    } finally {
      fs.rmSync(floodDir, { recursive: true, force: true });
    }
  },
};

/**
 * Run Doctor's terminal, with the end of familiar doctor's report in it (the
 * terminal's page holds only the rows in view: the report's start has
 * scrolled away).
 */
/** Whether a task row's context menu offers item (then closes the menu). */

/** Issue 36: a task's status and activity, read from familiar. */
async function taskNamed(rpc, title) {
  const { tasks } = await rpc.request('task/list', {});
  const t = tasks.find((x) => x.title === title);
  if (!t) throw new Error(`no task "${title}"`);
  return rpc.request('task/get', { id: t.id });
}

/** Types text into a task view's message box and presses Enter (or clicks a button of the box). */
async function typeMessage(v, text, how = 'Enter') {
  const box = v.locator('#message');
  await box.waitFor({ state: 'visible', timeout: 30000 });
  await waitFor('the message box to take a message', async () => !(await box.isDisabled()), 30000, 100);
  await box.fill(text);
  if (how === 'Enter') await box.press('Enter');
  else await v.locator(how).click();
}

/**
 * Sends text from the message box until it is in the conversation: a
 * message the agent did not take (its bubble says "Not sent", the PTY
 * driver under load) is put back in the box and sent again, as a person
 * would (at most three times).
 */
async function sendUntilShown(v, text, marker) {
  for (let i = 0; ; i++) {
    await typeMessage(v, text);
    const shown = v.locator('#log .item.prompt', { hasText: marker });
    const failed = v.locator('#outgoing .item.state-failed', { hasText: marker });
    await shown.or(failed).first().waitFor({ timeout: 180000 });
    if (await shown.count()) return i;
    log(`chat: "${marker}" not taken: ${await failed.first().innerText()}`);
    if (i >= 2) throw new Error(`the agent did not take "${marker}" three times`);
    await failed.first().locator('button', { hasText: 'Put it back in the box' }).click();
  }
}

/**
 * After a Stop: the message reaches the model alone (not joined to the
 * interrupted prompt claude puts back in its input box: agent/pty.go waits
 * for it and clears it), and its answer the conversation.
 */
async function afterStop(v, model, marker, interrupted, reply) {
  const from = model.seen ?? 0;
  await received(model, marker, 120000, from);
  const joined = model.requests().slice(from).find((r) => (r.lastUserText ?? '').includes(marker) && interrupted.test(r.lastUserText));
  if (joined) throw new Error(`the message after a Stop reached the model joined to the interrupted prompt: ${JSON.stringify(joined.lastUserText)}`);
  await v.locator('#log .item.text', { hasText: reply }).waitFor({ timeout: 180000 });
}

/** Waits for the model to have received a request whose last user text holds marker; returns when, in this process's clock. */
async function received(model, marker, timeout = 120000, from = model.seen ?? 0) {
  // Only requests since the scenario's start (or from): the requests file
  // outlives runs (test-artifacts), and an old run's line matched at once.
  await waitFor(`the model to receive ${JSON.stringify(marker)}`, () => model.requests().slice(from).some((r) => (r.lastUserText ?? '').includes(marker)), timeout, 20);
  return Date.now();
}

/** The conversation's rows in order, as kind and text (for "came after" checks). */
async function rowsOf(v) {
  return v.locator('#log > .item').evaluateAll((ns) => ns.map((n) => ({ kind: n.className, text: n.innerText })));
}

/**
 * Issue 36, the conversation: a follow-up typed while the agent works is
 * shown as the person's, said to be queued, and delivered after the turn;
 * the PROMPT block is the person's words with their line breaks (never
 * familiar's template); 20 sends to an idle agent (Enter → the model has
 * it, p50/p95); Stop during a slow turn (Stop → the turn's end, p50/p95),
 * then a message after it; the same under the stream driver, whose
 * terminal shows no template either.
 */
async function chat(model) {
  model.seen = model.requests().length;
  await withSession('chat', { env: model.env, settings: { 'terminal.integrated.gpuAcceleration': 'off' } }, async (s) => {
    await s.ready();
    await s.openView();
    const rpc = await socketClient(s);
    try {
      const title = 'Talk to me';
      await s.newTask(title, 'Please write the notes.\nKeep them *short* and **plain**.\n@@DELAY 8s\n@@TEXT First turn done.');
      await waitRow(s, title, ['running'], 180000);
      const v = await openView(s, title);
      // The PROMPT block: the person's words, two lines, no template, no Markdown.
      const prompt = v.locator('#log .item.prompt').first();
      await prompt.waitFor({ timeout: 180000 });
      const said = await prompt.locator('.words').innerText();
      if (!said.includes('Please write the notes.\nKeep them *short* and **plain**.')) throw new Error(`the prompt block shows ${JSON.stringify(said)}`);
      if (/You are implementing|When you finish|# Task/.test(await prompt.innerText())) throw new Error('the prompt block shows familiar\'s template');
      // A follow-up while the agent works: queued, said so, shown as the person's.
      await typeMessage(v, 'Also say hello.\n@@TEXT Follow-up taken.');
      await v.locator('#outgoing .item.prompt', { hasText: 'Queued' }).waitFor({ timeout: 15000 });
      await v.locator('#stop').waitFor({ state: 'visible', timeout: 15000 });
      await s.shot('follow-up-queued');
      await received(model, 'Also say hello.');
      await v.locator('#log .item.text', { hasText: 'Follow-up taken.' }).waitFor({ timeout: 180000 });
      // Delivered after the turn: the first answer comes before the follow-up in the conversation.
      const rows = await rowsOf(v);
      const first = rows.findIndex((r) => r.text.includes('First turn done.'));
      const follow = rows.findIndex((r) => r.kind.includes('prompt') && r.text.includes('Also say hello.'));
      if (first < 0 || follow < 0 || follow < first) throw new Error(`the follow-up is not after the first turn: ${JSON.stringify(rows.map((r) => r.text.slice(0, 40)))}`);
      await v.locator('#outgoing .item').first().waitFor({ state: 'detached', timeout: 30000 });
      await s.shot('follow-up-delivered');

      // 20 sends to an idle (warm) agent: Enter → the model has the message.
      await waitRow(s, title, ['ready to merge', 'done, no changes'], 180000);
      const n = Number(process.env.FAMILIAR_UI_RUNS ?? 20);
      const sends = [];
      for (let i = 1; i <= n; i++) {
        await waitRow(s, title, ['ready to merge', 'done, no changes'], 180000);
        const marker = `ping ${i} of ${n}`;
        const box = v.locator('#message');
        await waitFor('the message box to take a message', async () => !(await box.isDisabled()), 30000, 50);
        await box.fill(`${marker}\n@@TEXT pong ${i}.`);
        const from = model.requests().length;
        const t0 = Date.now();
        await box.press('Enter');
        sends.push((await received(model, marker, 120000, from)) - t0);
        await v.locator('#log .item.text', { hasText: `pong ${i}.` }).waitFor({ timeout: 180000 });
      }
      const load = os.loadavg()[0].toFixed(1);
      log(`chat: message box Enter → the model has it (idle agent), ${n} sends: p50 ${percentile(sends, 50)} / p95 ${percentile(sends, 95)} ms (load ${load} on ${os.cpus().length} cores) ${JSON.stringify(sends)}`);

      // Stop during a slow turn, five times: Stop → the turn's end (the task no longer running).
      const stops = [];
      for (let i = 1; i <= 5; i++) {
        await waitRow(s, title, ['ready to merge', 'done, no changes', 'waiting on you'], 180000);
        // Stopped as a person would: once the message is in the conversation and the agent works on it.
        await sendUntilShown(v, `slow ${i}\n@@DELAY 30s\n@@TEXT never said ${i}.`, `slow ${i}`);
        await waitFor('the turn to run', async () => (await taskNamed(rpc, title)).status === 'running', 180000, 50);
        await v.locator('#stop').waitFor({ state: 'visible', timeout: 15000 });
        if (i === 1) await s.shot('stop-offered');
        const t0 = Date.now();
        await v.locator('#stop').click();
        await waitFor('the turn to end after Stop', async () => (await taskNamed(rpc, title)).status !== 'running', 180000, 20);
        stops.push(Date.now() - t0);
      }
      const after = await taskNamed(rpc, title);
      log(`chat: Stop → the turn's end (PTY), 5 stops: p50 ${percentile(stops, 50)} / p95 ${percentile(stops, 95)} ms ${JSON.stringify(stops)}; the task is then ${after.status}`);
      await s.shot('stopped');
      // After a Stop the next message goes on from there.
      await sendUntilShown(v, 'After the stop.\n@@TEXT Going on after the stop.', 'After the stop.');
      await afterStop(v, model, 'After the stop.', /slow \d/, 'Going on after the stop.');
      // No stopped turn's answer reached the conversation.
      const leaked = await v.locator('#log .item.text', { hasText: 'never said' }).evaluateAll((ns) => ns.map((n) => n.innerText));
      if (leaked.length) throw new Error(`a stopped turn's answer reached the conversation: ${JSON.stringify(leaked)}`);

      // Stop and send: steering a running turn.
      await waitRow(s, title, ['ready to merge', 'done, no changes', 'waiting on you'], 180000);
      await sendUntilShown(v, 'steer me\n@@DELAY 30s\n@@TEXT never steered.', 'steer me');
      await waitFor('the turn to run', async () => (await taskNamed(rpc, title)).status === 'running', 180000, 50);
      // Stop and send from the keyboard: Ctrl+Enter in the box.
      await v.locator('#message').fill('Change of plan.\n@@TEXT Steered.');
      await v.locator('#message').press('Control+Enter');
      await afterStop(v, model, 'Change of plan.', /steer me/, 'Steered.');
      await s.shot('steered');

      // The stream driver: the same box, Stop in the middle of a slow stream.
      const st = 'Streamed chat';
      await rpc.request('task/create', { title: st, driver: 'stream', description: 'Stream it.\nSlowly.\n@@TEXT Ready.' });
      await waitRow(s, st, ['ready to merge', 'done, no changes'], 180000);
      const sv = await openView(s, st);
      const said2 = await sv.locator('#log .item.prompt .words').first().innerText();
      if (said2 !== 'Stream it.\nSlowly.\n@@TEXT Ready.') throw new Error(`the stream task's prompt block shows ${JSON.stringify(said2)}`);
      // 300 words 200 ms apart: a minute of streaming, so that Stop is still
      // there after the screenshot below (at load 20 the 100 of before, 20 s,
      // had ended before the click).
      await typeMessage(sv, `Stream slowly.\n@@PACE 200ms\n@@TEXT ${'word '.repeat(300)}end.`);
      await sv.locator('#log .item.text', { hasText: 'word word word' }).waitFor({ timeout: 180000 });
      await s.shot('stream-streaming');
      const t0 = Date.now();
      await sv.locator('#stop').click();
      const sid = (await taskNamed(rpc, st)).id;
      await waitFor('the stream turn to end after Stop', async () => (await rpc.request('task/get', { id: sid })).status !== 'running', 180000, 20);
      log(`chat: Stop → the turn's end (stream driver, mid-stream): ${Date.now() - t0} ms`);
      await typeMessage(sv, 'Once more.\n@@TEXT Streamed again.');
      await sv.locator('#log .item.text', { hasText: 'Streamed again.' }).waitFor({ timeout: 180000 });
      // Its terminal: the conversation in words, the person's words, no template.
      await s.contextMenu(st, 'Open Terminal');
      await s.page.locator('.xterm-rows', { hasText: 'Streamed again.' }).first().waitFor({ timeout: 30000 });
      const screen = await s.page.locator('.xterm-rows').last().innerText();
      if (/When you finish|You are working on/.test(screen)) throw new Error(`the stream terminal shows familiar's template: ${screen.slice(0, 400)}`);
      await s.shot('stream-terminal-words');
      fs.writeFileSync(path.join(artifacts, 'chat.json'), JSON.stringify({ sends, stops, load: os.loadavg(), cpus: os.cpus().length }, null, 2));
    } finally {
      rpc.close();
    }
  });
}

/**
 * Issue 36, questions where they are read: a Write answered from the card
 * in the conversation after Review… (the notification goes too); Allow and
 * accept edits (the next edit goes through unasked); a chained command's
 * card says in words why there is no Allow Always and is denied with a
 * message; an inline "1. … 2. …" question answered by a button; a window
 * reload with a task view open, screenshots before and after.
 */
async function cards(model) {
  model.seen = model.requests().length;
  await withSession('cards', { env: model.env }, async (s) => {
    await s.ready();
    await s.openView();
    const rpc = await socketClient(s);
    try {
      const title = 'Card write';
      const content = '# Notes\nfrom the card\n';
      await s.newTask(title, `Write the notes.\n@@TOOL Write ${JSON.stringify({ file_path: 'docs/notes.md', content })}\n@@TEXT Wrote the notes.`);
      const ask = `"${title}" asks to write docs/notes.md`;
      await s.toast(ask).waitFor({ timeout: 180000 });
      let v = await openView(s, title);
      const card = () => v.locator('#card .card');
      await card().waitFor({ timeout: 60000 });
      const said = await card().innerText();
      if (!said.includes('Wants to write docs/notes.md') || said.includes(s.dir) || /worktrees/.test(said)) throw new Error(`the card says ${JSON.stringify(said)}`);
      await s.shot('card-write', 'question-card');
      await card().locator('button', { hasText: 'Review…' }).click();
      await s.page.locator('.monaco-diff-editor .view-lines', { hasText: 'from the card' }).first().waitFor({ timeout: 60000 });
      await s.shot('card-review');
      v = await openView(s, title);
      await card().locator('button.allow').click();
      // Answering on the card takes the notification away too.
      await s.toastGone(ask, 60000);
      await card().waitFor({ state: 'detached', timeout: 60000 });
      await waitRow(s, title, ['ready to merge'], 180000);
      const t = await taskNamed(rpc, title);
      const written = fs.readFileSync(path.join(t.worktree.path, 'docs/notes.md'), 'utf8');
      if (written !== content) throw new Error(`the card's Allow wrote ${JSON.stringify(written)}`);
      await v.locator('#log .item.tool.status-completed', { hasText: 'docs/notes.md' }).first().waitFor({ timeout: 60000 });

      // Allow and accept edits for this task: the second edit is not asked.
      const ae = 'Accept edits';
      await rpc.request('task/create', { title: ae, description: [
        `@@TOOL Write ${JSON.stringify({ file_path: 'a.md', content: 'a\n' })}`,
        `@@TOOL Write ${JSON.stringify({ file_path: 'b.md', content: 'b\n' })}`,
        '@@TEXT Both written.'].join('\n') });
      await s.toast(`"${ae}" asks to write a.md`).waitFor({ timeout: 180000 });
      v = await openView(s, ae);
      await card().locator('button', { hasText: 'Allow and accept edits for this task' }).click();
      await waitRow(s, ae, ['ready to merge'], 180000);
      const aeTask = await taskNamed(rpc, ae);
      for (const f of ['a.md', 'b.md']) if (!fs.existsSync(path.join(aeTask.worktree.path, f))) throw new Error(`accept edits: ${f} not written`);
      const asked = s.traceLines().filter((l) => l.ev === 'prompt' && l.task === aeTask.id);
      if (asked.length !== 1) throw new Error(`accept edits: ${asked.length} questions, not 1: ${JSON.stringify(asked.map((l) => l.detail))}`);

      // A chained command: no Allow Always, and why in words; denied with a message from the card.
      const ch = 'Chained';
      // (familiar remembers a chained command word for word up to 1 KB: this one is longer.)
      const chained = `touch one.txt && touch two.txt${' && true'.repeat(140)}`;
      await rpc.request('task/create', { title: ch, description: `@@TOOL Bash ${JSON.stringify({ command: chained })}\n@@TEXT Told no.` });
      const chAsk = `"${ch}" asks to run Bash: touch one.txt && touch two.txt`;
      const chToast = s.toast(chAsk);
      await chToast.waitFor({ timeout: 180000 });
      if (await chToast.getByRole('link', { name: 'Allow Always…' }).count()) throw new Error('the notification offers Allow Always… on a chained command');
      v = await openView(s, ch);
      await card().waitFor({ timeout: 60000 });
      if (await card().locator('button', { hasText: 'Allow Always…' }).count()) throw new Error('the card offers Allow Always… on a chained command');
      await card().locator('.hint', { hasText: 'no rule can cover it' }).waitFor({ timeout: 15000 });
      await card().locator('pre.command', { hasText: 'touch one.txt && touch two.txt' }).waitFor({ timeout: 15000 });
      await s.shot('card-chained');
      await card().locator('button', { hasText: 'Deny with a message…' }).click();
      await card().locator('input.denytext').fill('run them one at a time');
      await card().locator('input.denytext').press('Enter');
      await waitFor('the denial\'s message to reach the model', () => model.requests().slice(model.seen).some((r) => (r.toolResults ?? []).some((x) => x.content.includes('run them one at a time'))), 180000);
      await s.toastGone(chAsk, 60000);

      // Inline options answered by a button.
      const pick = 'Pick inline';
      await rpc.request('task/create', { title: pick, description: '@@TEXT Should I use Postgres or SQLite? 1. Postgres 2. SQLite' });
      await waitRow(s, pick, ['waiting on you'], 180000);
      v = await openView(s, pick);
      await card().locator('button.option', { hasText: 'SQLite' }).waitFor({ timeout: 60000 });
      await card().locator('button.option', { hasText: 'Postgres' }).waitFor({ timeout: 15000 });
      await s.shot('card-inline-options');
      await card().locator('button.option', { hasText: 'SQLite' }).click();
      await waitFor('the button\'s answer to reach the model', () => model.requests().slice(model.seen).some((r) => r.lastUserText === 'SQLite'), 180000);
      await card().waitFor({ state: 'detached', timeout: 60000 });
      await s.toastGone(`"${pick}" asks:`, 60000);

      // The message box continues a paused task and a blocked one, in their conversations.
      const paused = 'Paused chat';
      await rpc.request('task/create', { title: paused, description: 'Wait a while.\n@@DELAY 20s\n@@TEXT Waited.' });
      await waitRow(s, paused, ['running'], 180000);
      // Paused once the agent works on it (its prompt in the conversation: claude saved its session).
      v = await openView(s, paused);
      await v.locator('#log .item.prompt').first().waitFor({ timeout: 180000 });
      const pid = (await taskNamed(rpc, paused)).id;
      await rpc.request('task/pause', { id: pid });
      await waitRow(s, paused, ['paused'], 180000);
      v = await openView(s, paused);
      await typeMessage(v, 'Go on from the pause.\n@@TEXT Resumed by a message.');
      await received(model, 'Go on from the pause.', 180000);
      await v.locator('#log .item.text', { hasText: 'Resumed by a message.' }).waitFor({ timeout: 180000 });
      const blockedTitle = 'Blocked chat';
      await rpc.request('task/create', { title: blockedTitle, description: '@@ERROR 400 the scripted model refuses this turn' });
      await waitRow(s, blockedTitle, ['blocked'], 180000);
      v = await openView(s, blockedTitle);
      await typeMessage(v, 'Try again now.\n@@TEXT Unblocked by a message.');
      // The task goes on in its conversation with the message. (The scripted
      // model answers it with the 400 again: claude sends the failed turn's
      // prompt and this one as one user message, whose first directive is
      // the error.)
      await received(model, 'Try again now.', 180000);
      await v.locator('#log .item.prompt', { hasText: 'Try again now.' }).waitFor({ timeout: 180000 });
      await s.shot('blocked-continued');

      // A window reload with a task view open: the same view after it.
      v = await openView(s, title);
      const row = () => v.locator('#log .item.tool', { hasText: 'docs/notes.md' }).first();
      await row().waitFor({ timeout: 60000 });
      const before = await row().locator('.title').boundingBox();
      await s.shot('before-reload');
      rpc.close();
      await s.command('Developer: Reload Window');
      await s.page.waitForEvent('load', { timeout: 60000 }).catch(() => undefined);
      await s.ready();
      v = await viewOf(s, title, 120000);
      await row().waitFor({ timeout: 120000 });
      await v.locator('#log .item.prompt .words', { hasText: 'Write the notes.' }).waitFor({ timeout: 60000 });
      const after = await row().locator('.title').boundingBox();
      const rowText = await row().locator('summary').innerText();
      await s.shot('after-reload');
      if (rowText.includes(s.dir) || /worktrees\//.test(rowText)) throw new Error(`after the reload the Write row reads ${JSON.stringify(rowText)}`);
      if (!before || !after || after.width < before.width * 0.8 || after.height > before.height * 1.5) throw new Error(`the Write row's title was ${JSON.stringify(before)} before the reload, ${JSON.stringify(after)} after`);

      // Try before keeping: Open Worktree opens a window on the task's worktree.
      const rpc2 = await socketClient(s);
      let wt;
      try {
        wt = (await taskNamed(rpc2, title)).worktree.path;
      } finally {
        rpc2.close();
      }
      const opened = s.page.context().waitForEvent('page', { timeout: 60000 });
      await s.contextMenu(title, 'Open Worktree');
      const win = await opened;
      await waitFor('the new window on the worktree', () => decodeURIComponent(win.url()).includes(wt), 30000, 100);
      log(`cards: Open Worktree opened ${decodeURIComponent(win.url()).replace(s.dir, '<session>')}`);
      await win.close();
    } finally {
      rpc.close();
    }
  });
}

async function menuHas(s, title, item) {
  await s.treeRow(title).click({ button: 'right' });
  const menu = s.page.locator('.context-view .monaco-menu');
  await menu.locator('.action-menu-item').first().waitFor({ state: 'visible', timeout: 30000 });
  const n = await menu.locator('.action-item:not(.disabled) .action-menu-item', { hasText: new RegExp(`^${item}$`) }).count();
  await s.page.keyboard.press('Escape');
  await menu.waitFor({ state: 'hidden', timeout: 10000 });
  return n > 0;
}

async function doctorTerminal(s, ending = /all checks passed|doctor found problems/) {
  await s.page.locator('.xterm-rows', { hasText: ending }).first().waitFor({ timeout: 60000 });
}

/**
 * A task the API refuses (401): a warning names it and the reason in words,
 * with the actions that fit a refused login (Run Doctor, Retry, Open
 * Terminal; no Continue…, which cannot help), and the status bar counts it.
 */
async function blocked(s) {
  const title = 'Refused';
  await s.newTask(title, '@@ERROR 401 invalid x-api-key');
  const warning = `"${title}" is blocked: the API refused its credentials`;
  const toast = s.toast(warning);
  await toast.waitFor({ timeout: 120000 });
  for (const name of ['Run Doctor', 'Retry', 'Open Terminal']) await toast.getByRole('button', { name, exact: true }).waitFor({ timeout: 15000 });
  if (await toast.getByRole('button', { name: 'Continue…' }).count()) throw new Error('Continue… offered for a refused login');
  await s.page.locator('.statusbar-item', { hasText: '1 blocked' }).first().waitFor({ timeout: 15000 });
  await s.waitTaskStatus(title, 'blocked');
  // One warning for one end, though a newer familiar sends both task/updated and task/completed.
  const shown = await s.page.locator('.notifications-toasts .notification-toast', { hasText: warning }).count();
  if (shown !== 1) throw new Error(`${shown} warnings for one blocked task`);
  await s.shot('blocked-warning');
  await s.clickToastButton(warning, 'Run Doctor');
  await doctorTerminal(s);
  await s.shot('blocked-run-doctor');
}

function pathWithout(bin) {
  return (process.env.PATH ?? '').split(':').filter((d) => d && !fs.existsSync(path.join(d, bin))).join(':');
}

const choiceInput = (q, multi = false) => JSON.stringify({ questions: [{ question: q, header: 'Pick', multiSelect: multi, options: [
  { label: 'Postgres', description: 'Relational' }, { label: 'SQLite', description: 'Embedded' }] }] });

/** A multiple-choice question answered through the QuickPick; then questions answered in another window close the QuickPick and the permission notification. */
async function choice(s, model) {
  const title = 'Pick a database';
  await s.newTask(title, `@@TOOL AskUserQuestion ${choiceInput('Which database?')}`);
  const ask = `"${title}" asks: Which database?`;
  await s.clickToastButton(ask, 'Answer…');
  await s.page.locator('.quick-input-widget .monaco-list-row', { hasText: 'SQLite' }).waitFor();
  await s.shot('choice-quickpick');
  await s.pick('SQLite');
  await waitFor('the answer to reach the model', () => model.requests().some((r) => r.toolResults?.some((t) => /SQLite/.test(t.content))), 60000);

  // Multi-select (the question's multiSelect): a QuickPick with checkboxes.
  const multiTitle = 'Pick several';
  await s.newTask(multiTitle, `@@TOOL AskUserQuestion ${choiceInput('Which ones?', true)}`);
  await s.clickToastButton(`"${multiTitle}" asks: Which ones?`, 'Answer…');
  await s.page.locator('.quick-input-widget .quick-input-title', { hasText: '(pick any)' }).waitFor();
  for (const label of ['Postgres', 'SQLite']) await s.page.locator('.quick-input-widget .monaco-list-row', { hasText: label }).first().click();
  await s.shot('multi-select-quickpick');
  await s.page.locator('.quick-input-widget .quick-input-box input').press('Enter');
  await waitFor('both answers to reach the model', () => model.requests().some((r) => r.toolResults?.some((t) => /"Which ones\?"="Postgres, SQLite"/.test(t.content))), 60000);

  // Answered elsewhere: another client answers while this window's QuickPick is open.
  const other = await socketClient(s);
  try {
    const title2 = 'Pick again';
    await s.newTask(title2, `@@TOOL AskUserQuestion ${choiceInput('Which one now?')}`);
    await s.clickToastButton(`"${title2}" asks: Which one now?`, 'Answer…');
    await s.page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Postgres' }).waitFor();
    const { tasks } = await other.request('task/list', { status: ['waiting'] });
    const t = tasks.find((x) => x.title === title2);
    await other.request('task/respond', { id: t.id, questionId: t.pendingQuestion.id, optionId: '1' });
    await s.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 15000 });
    await waitFor('the other answer to reach the model', () => model.requests().some((r) => r.toolResults?.some((x) => /Postgres/.test(x.content))), 60000);
    await s.shot('answered-elsewhere');

    // A permission notification counts down (by the minute: a 61 s timeout
    // shows the change within seconds), and leaves when the question is
    // answered in another window.
    await other.request('settings/update', { settings: { approvalTimeoutSec: 61 } });
    const title3 = 'Allow elsewhere';
    await s.newTask(title3, bashTask('elsewhere.txt', 'allowed in another window'));
    const ask3 = `"${title3}" asks to run Bash`;
    const toast3 = s.toast(ask3);
    await toast3.waitFor({ timeout: 120000 });
    await other.request('settings/update', { settings: { approvalTimeoutSec: 300 } });
    await waitFor('the countdown to move', async () => /denied automatically in under a minute/.test(await toast3.textContent() ?? ''), 15000, 200);
    await s.shot('permission-countdown');
    const waiting = (await other.request('task/list', { status: ['waiting'] })).tasks.find((x) => x.title === title3);
    await other.request('task/respond', { id: waiting.id, questionId: waiting.pendingQuestion.id, optionId: 'allow' });
    await s.toastGone(ask3);
    await s.waitTaskStatus(title3, 'merging');
    await s.shot('permission-answered-elsewhere');

    // More… → Edit the command…: the command as edited is what runs.
    const title4 = 'Edit first';
    await s.newTask(title4, bashTask('as-asked.txt', 'as asked'));
    const ask4 = `"${title4}" asks to run Bash`;
    await s.clickToastButton(ask4, 'More…');
    await s.pick('Edit the command…');
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: 'Edit the command' }).waitFor({ timeout: 15000 });
    const box = s.page.locator('.quick-input-widget .quick-input-box input');
    await waitFor('the command to edit in the box', async () => (await box.inputValue()).includes('as-asked.txt'), 15000);
    await box.fill(`printf 'as edited\\n' > as-edited.txt`);
    await s.shot('edit-the-command');
    await box.press('Enter');
    await s.waitTaskStatus(title4, 'merging');
    const edited = (await other.request('task/list', {})).tasks.find((x) => x.title === title4);
    const wt = edited.worktree.path;
    if (fs.readFileSync(path.join(wt, 'as-edited.txt'), 'utf8') !== 'as edited\n' || fs.existsSync(path.join(wt, 'as-asked.txt'))) {
      throw new Error(`the edited command did not run as edited in ${wt}`);
    }

    // More… → Deny with a message…: the agent reads the message.
    const title5 = 'Deny with words';
    await s.newTask(title5, bashTask('denied.txt', 'never written'));
    await s.clickToastButton(`"${title5}" asks to run Bash`, 'More…');
    await s.pick('Deny with a message…');
    await s.page.locator('.quick-input-widget .quick-input-title', { hasText: `Deny "${title5}"` }).waitFor({ timeout: 15000 });
    await box.fill('Use the Write tool for that instead');
    await box.press('Enter');
    await waitFor('the message to reach the model', () => model.requests().some((r) => r.toolResults?.some((x) => /Use the Write tool for that instead/.test(x.content))), 60000);

    // Nobody answers: at the approval timeout the notification goes and a
    // warning says the request was denied.
    await other.request('settings/update', { settings: { approvalTimeoutSec: 2 } });
    const title6 = 'Nobody answers';
    try {
      await s.newTask(title6, bashTask('unanswered.txt', 'never written'));
      await s.toast(`"${title6}" got no answer in time: denied`).waitFor({ timeout: 60000 });
    } finally {
      await other.request('settings/update', { settings: { approvalTimeoutSec: 300 } });
    }
    await s.toastGone(`"${title6}" asks to run Bash`);
    await s.shot('denied-at-the-timeout');
  } finally {
    other.close();
  }
}

/** task/question → notification visible, over N permission prompts of one task (from a selection's script). */
async function latency(s) {
  const n = Number(process.env.FAMILIAR_UI_RUNS ?? 20);
  await s.command('Go to File');
  await s.pick('latency-script.txt');
  await s.page.locator('.monaco-editor .view-lines', { hasText: 'step-1' }).first().waitFor();
  await s.page.locator('.monaco-editor .view-lines').first().click();
  await s.command('Select All');
  await s.page.locator('.statusbar-item', { hasText: 'selected' }).first().waitFor();
  await watchToasts(s.page);
  // The selection becomes hints.notes: the scripted model reads its directives from there.
  await s.newTask('Latency', 'Run the steps in the selected script');
  for (let i = 1; i <= n; i++) {
    const text = `touch step-${i}.txt`;
    await s.toast(text).waitFor({ timeout: 60000 });
    if (i === 1) await s.shot('latency-first-prompt');
    await s.clickToastButton(text, 'Allow');
  }
  const trace = s.traceLines();
  const toasts = await toastTimes(s.page);
  const samples = [], hostSide = [];
  for (let i = 1; i <= n; i++) {
    const cmd = `touch step-${i}.txt`;
    const toast = toasts.find((x) => x.text.includes(cmd) && x.text.includes('Latency'));
    const prompt = trace.find((x) => x.ev === 'prompt' && x.title === 'Latency' && x.detail === cmd);
    if (!toast || !prompt) continue;
    // familiar's time of the transition to waiting: the first snapshot with this question.
    const w = trace.find((x) => x.ev === 'waiting' && x.question === prompt.question);
    if (!w) continue;
    const t0 = Date.parse(w.updatedAt);
    samples.push(toast.at - t0);
    const q = trace.find((x) => x.ev === 'question' && x.question === prompt.question);
    if (q) hostSide.push(q.at - t0);
  }
  const result = {
    runs: samples.length,
    questionToNotificationMs: { p50: percentile(samples, 50), p95: percentile(samples, 95), max: Math.max(...samples) },
    questionToExtensionHostMs: { p50: percentile(hostSide, 50), p95: percentile(hostSide, 95) },
    samples,
  };
  fs.writeFileSync(path.join(artifacts, 'latency.json'), JSON.stringify(result, null, 2));
  log(`latency: task/question → notification visible p50 ${result.questionToNotificationMs.p50} ms, p95 ${result.questionToNotificationMs.p95} ms over ${samples.length} runs (to the extension host: p50 ${result.questionToExtensionHostMs.p50} ms)`);
  if (samples.length !== n) throw new Error(`measured ${samples.length} of ${n} prompts`);
}

/** The first line of the logs under dir (code-server's, the extension host's) that holds text, if any. */
function grepLogs(dir, text) {
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith('.log') ? [path.join(d, e.name)] : []);
  for (const f of walk(dir)) {
    const line = fs.readFileSync(f, 'utf8').split('\n').find((l) => l.includes(text));
    if (line) return line.trim();
  }
  return '';
}

/** Clicks alternately on two tree rows and times until the details editor shows the clicked task. */
async function clickLatency(s, a, b, rounds) {
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const title = i % 2 ? a : b;
    const row = s.treeRow(title);
    const t0 = Date.now();
    await row.click();
    // The task view (one preview tab the clicks reuse) shows the task's title.
    await view(s).locator('#head h1', { hasText: title }).first().waitFor({ timeout: 180000 }).catch((err) => {
      // A click that ran a row command VS Code had dropped shows nothing: the
      // extension host's log says so (a row's click with arguments did, its
      // row redrawn meanwhile).
      const dead = grepLogs(s.dir, 'Actual command not found');
      throw new Error(`click ${i + 1} on "${title}" opened no task view${dead ? `; the extension host: ${dead}` : ''}: ${err.message}`);
    });
    times.push(Date.now() - t0);
  }
  return times;
}

/** The extension host's trace between two times: mean CPU ms per second, worst event-loop delay p99. */
function hostBusy(s, from, to) {
  const h = s.traceLines().filter((x) => x.ev === 'host' && x.at >= from && x.at <= to + 1000);
  if (!h.length) return { cpuMsPerSec: null, lagP99Ms: null };
  return { cpuMsPerSec: Math.round(h.reduce((a, x) => a + x.cpuMs, 0) / h.length), lagP99Ms: Math.max(...h.map((x) => x.lagP99Ms)) };
}

/** The renderer's own CPU time (CDP Performance metrics), in ms per second since the last call. */
async function rendererMeter(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const read = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  let last = await read(), at = Date.now();
  return async () => {
    const now = await read(), t = Date.now();
    const per = (k) => Math.round(((now[k] ?? 0) - (last[k] ?? 0)) * 1000 / ((t - at) / 1000));
    const r = { taskMsPerSec: per('TaskDuration'), scriptMsPerSec: per('ScriptDuration'), layoutMsPerSec: per('LayoutDuration'), styleMsPerSec: per('RecalcStyleDuration') };
    last = now; at = t;
    return r;
  };
}

// Clicks per phase: the figure is a median on 2 shared cores, where one busy
// second moves a median of 10 by a third.
const clicks = 20;

async function load(s, floodDir, agentNice) {
  await s.ready();
  const meter = await rendererMeter(s.page);
  const other = await socketClient(s);
  try {
    const make = (title) => other.request('task/create', { title, description: 'stay busy' });
    await make('Idle A');
    await make('Idle B');
    await s.openView();
    await s.waitTaskStatus('Idle A', 'running', 60000);
    await s.waitTaskStatus('Idle B', 'running', 60000);
    await clickLatency(s, 'Idle A', 'Idle B', 4); // warm up
    await meter();
    const idleFrom = Date.now();
    const idle = await clickLatency(s, 'Idle A', 'Idle B', clicks);
    const rendererIdle = await meter();
    const hostIdle = hostBusy(s, idleFrom, Date.now());

    fs.writeFileSync(path.join(floodDir, 'on'), '');
    const flood = await make('Flood');
    await waitFor('the flooder to start', () => fs.existsSync(path.join(floodDir, 'flooder')), 60000);
    await s.treeRow('Flood').click();
    await s.command('Familiar: Open Terminal');
    await s.page.locator('.terminal-wrapper, .xterm').first().waitFor({ timeout: 30000 });
    for (let i = 0; i < 27; i++) await make(`Busy ${i + 1}`);
    await waitFor('30 tasks running', async () => {
      const { tasks } = await other.request('task/list', { status: ['running'], limit: 200 });
      return tasks.length >= 30;
    }, 180000, 500);
    const size = async () => (await other.request('task/output', { id: flood.id, offset: 0, limit: 1 })).size;
    const s0 = await size(), t0 = Date.now();
    await new Promise((r) => setTimeout(r, 2000)); // a measurement window, not a wait for a condition
    const rate = (await size() - s0) / ((Date.now() - t0) / 1000) / 1e6;
    await s.shot('thirty-tasks-flooding');
    await clickLatency(s, 'Idle A', 'Idle B', 2); // warm up
    const s1 = await size(), t1 = Date.now();
    await meter();
    const loadedFrom = Date.now();
    const loaded = await clickLatency(s, 'Idle A', 'Idle B', clicks);
    const rendererLoaded = await meter();
    const hostLoaded = hostBusy(s, loadedFrom, Date.now());
    const rateDuring = (await size() - s1) / ((Date.now() - t1) / 1000) / 1e6;
    const result = {
      agentNice,
      floodMBps: Number(rate.toFixed(1)),
      floodDuringClicksMBps: Number(rateDuring.toFixed(1)),
      idleClickMs: { p50: percentile(idle, 50), p95: percentile(idle, 95) },
      loadedClickMs: { p50: percentile(loaded, 50), p95: percentile(loaded, 95) },
      ratioP50: Number((percentile(loaded, 50) / percentile(idle, 50)).toFixed(2)),
      // The workbench renderer's main thread during the clicks (CDP metrics).
      renderer: { idle: rendererIdle, loaded: rendererLoaded },
      // The extension host (its own trace): CPU ms per second and event-loop delay.
      extensionHost: { idle: hostIdle, loaded: hostLoaded },
      // The machine's load average during the run: the figures mean little on a saturated machine.
      loadAverage: os.loadavg().map((x) => Number(x.toFixed(1))), cpus: os.cpus().length,
      idle, loaded,
    };
    fs.writeFileSync(path.join(artifacts, 'load.json'), JSON.stringify(result, null, 2));
    // Reported, not asserted (no wall-clock asserts in tests): the target is
    // loaded p50 within 2× of idle.
    log(`load: tree click → task view idle p50 ${result.idleClickMs.p50} / p95 ${result.idleClickMs.p95} ms; with 30 tasks + flood at ${result.floodMBps} MB/s (${result.floodDuringClicksMBps} MB/s during the clicks) p50 ${result.loadedClickMs.p50} / p95 ${result.loadedClickMs.p95} ms (×${result.ratioP50}; agents at nice ${agentNice}; load average ${result.loadAverage[0]} on ${result.cpus} cores; renderer busy ${rendererIdle.taskMsPerSec} → ${rendererLoaded.taskMsPerSec} ms/s, extension host ${hostIdle.cpuMsPerSec} → ${hostLoaded.cpuMsPerSec} ms/s with event-loop delay p99 ${hostIdle.lagP99Ms} → ${hostLoaded.lagP99Ms} ms)`);
    // The clicks switched the terminal to the clicked task: show the flooded one.
    await s.treeRow('Flood').click();
    await s.command('Familiar: Open Terminal');
    await s.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 15000 });
    await s.shot('terminal-under-flood');
  } finally {
    other.close();
  }
}

const wanted = process.argv.slice(2).length ? process.argv.slice(2) : ['main', 'noclaude', 'reload', 'control', 'view', 'manage', 'queue', 'mode', 'skills', 'mcp', 'chat', 'cards', 'keep', 'mention', 'bigview', 'plan', 'schema', 'vsix', 'load'];
fs.mkdirSync(artifacts, { recursive: true });
for (const p of [paths.node24, paths.codeServer, paths.chromium, paths.familiar, paths.fakemodel, paths.fakeagent]) {
  if (!fs.existsSync(p)) {
    console.error(`missing ${p}: run bash .ci/run-vscode (it installs and builds everything)`);
    process.exit(1);
  }
}
if (!fs.existsSync(paths.claude)) {
  console.error(`missing the claude CLI at ${paths.claude}: run bash .ci/run-tools or set FAMILIAR_CLAUDE`);
  process.exit(1);
}
// The skills scenario looks for its skills' descriptions in what reached the model.
const model = await startModel(path.join(artifacts, 'model-requests.jsonl'), [skillMarkers.relnotes, skillMarkers.lint, mentionMarker]);
// Scenarios known to fail for a reason outside the extension (named with the
// reason in .ci/run-vscode): their failure is reported, not counted; their
// passing is reported so the entry gets removed.
const xfail = new Set((process.env.FAMILIAR_UI_XFAIL ?? '').split(',').filter(Boolean));
let failed = 0;
try {
  for (const name of wanted) {
    const t0 = Date.now();
    log(`== ${name}`);
    if (!scenarios[name]) {
      failed++;
      log(`FAIL ${name}: no such scenario (${Object.keys(scenarios).join(', ')})`);
      continue;
    }
    try {
      await scenarios[name](model);
      log(`ok ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)${xfail.has(name) ? ' — UNEXPECTED PASS: remove it from FAMILIAR_UI_XFAIL' : ''}`);
    } catch (err) {
      if (xfail.has(name)) {
        log(`expected failure ${name} (FAMILIAR_UI_XFAIL): ${String(err.message ?? err).split('\n')[0]}`);
        continue;
      }
      failed++;
      log(`FAIL ${name}: ${err.stack ?? err}`);
    }
  }
} finally {
  await model.stop();
}
log(failed ? `${failed} scenario(s) failed; screenshots in ${artifacts}` : `all passed; screenshots in ${artifacts}`);
process.exit(failed ? 1 : 0);
