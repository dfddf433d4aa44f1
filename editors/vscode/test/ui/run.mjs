// UI tests of the extension in a real VS Code (code-server + chromium).
// Usage: node test/ui/run.mjs [scenario ...]   (default: all)
// Scenarios: main, choice, reload, noclaude, latency, load.
// FAMILIAR_UI_RUNS sets the latency sample count (default 20).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { artifacts, log, paths, percentile, startModel, startSession, waitFor } from './harness.mjs';

/** Runs fn in a fresh session; on failure keeps a screenshot and the code-server log. */
async function withSession(name, opts, fn) {
  const s = await startSession(name, opts);
  try {
    return await fn(s);
  } catch (err) {
    await s.shot('FAILED').catch(() => undefined);
    const logs = path.join(s.dir, 'code-server.log');
    if (fs.existsSync(logs)) fs.copyFileSync(logs, path.join(artifacts, `${name}-code-server.log`));
    throw err;
  } finally {
    await s.close();
    s.cleanup();
  }
}

const bashTask = (file, text) => `@@TOOL Bash {"command":"printf '${text}\\\\n' > ${file}"}`;

const scenarios = {
  /** New Task → permission notification → Allow → ready → Show changes → Merge → Undo. */
  async main(model) {
    await withSession('main', { env: model.env }, async (s) => {
      await s.ready();
      await s.shot('workbench');
      const title = 'Write hello';
      await s.newTask(title, bashTask('hello.txt', 'hello from the agent'));
      await s.treeRow(title).waitFor({ timeout: 60000 });
      const ask = s.toast(`"${title}" asks to run Bash`);
      await ask.waitFor({ timeout: 120000 });
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
      await s.clickToastButton('file(s) changed', 'Merge…');
      await s.answerInput('Squash', { expectTitle: 'merge' });
      const file = path.join(s.repo, 'hello.txt');
      await waitFor('hello.txt in the main checkout', () => fs.existsSync(file) && fs.readFileSync(file, 'utf8') === 'hello from the agent\n', 30000);
      await s.waitTaskStatus(title, 'merged');
      await s.toast(`merged "${title}"`).waitFor();
      await s.shot('merged');
      await s.clickToastButton(`merged "${title}"`, 'Undo');
      await waitFor('hello.txt gone after undo', () => !fs.existsSync(file), 30000);
      await s.toast(`undid "${title}"`).waitFor();
      await s.shot('undone');
    });
  },
};

const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(scenarios);
fs.mkdirSync(artifacts, { recursive: true });
for (const p of [paths.node24, paths.codeServer, paths.chromium, paths.familiar, paths.fakemodel]) {
  if (!fs.existsSync(p)) {
    console.error(`missing ${p}: run bash .ci/run-vscode (it installs and builds everything)`);
    process.exit(1);
  }
}
const model = await startModel(path.join(artifacts, 'model-requests.jsonl'));
let failed = 0;
try {
  for (const name of wanted) {
    const t0 = Date.now();
    log(`== ${name}`);
    try {
      await scenarios[name](model);
      log(`ok ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (err) {
      failed++;
      log(`FAIL ${name}: ${err.stack ?? err}`);
    }
  }
} finally {
  await model.stop();
}
log(failed ? `${failed} scenario(s) failed; screenshots in ${artifacts}` : `all passed; screenshots in ${artifacts}`);
process.exit(failed ? 1 : 0);
