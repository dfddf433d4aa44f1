// Which familiar the extension runs: the familiar.path setting, else the
// binary bundled in the VSIX, else PATH; a binary of another protocol is
// refused with both versions named. Fake binaries are shell scripts; the
// real one answers version --json as the extension expects.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BinaryError, bundledPath, PROTOCOL_VERSION, resolveFamiliar } from '../src/binary';
import { binaries } from './env';

/** A fake familiar at file that answers version --json with json. */
function fakeFamiliar(file: string, json: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `#!/bin/sh\n[ "$1 $2" = "version --json" ] || exit 3\necho '${json}'\n`, { mode: 0o755 });
  return file;
}

function layout() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'familiar-binary-'));
  const ext = path.join(dir, 'extension');
  const pathDir = path.join(dir, 'path');
  fs.mkdirSync(ext, { recursive: true });
  fakeFamiliar(path.join(pathDir, 'familiar'), `{"version":"on-path","protocolVersion":${PROTOCOL_VERSION}}`);
  return { dir, ext, env: { ...process.env, PATH: pathDir } };
}

test('the bundled binary is run unless familiar.path is set', async () => {
  const l = layout();
  try {
    fakeFamiliar(bundledPath(l.ext), `{"version":"bundled","protocolVersion":${PROTOCOL_VERSION}}`);
    const bundled = await resolveFamiliar({ configured: '', extensionPath: l.ext, env: l.env });
    assert.equal(bundled.source, 'bundled');
    assert.equal(bundled.version, 'bundled');
    assert.equal(bundled.path, path.join(l.ext, 'bin', 'familiar'));

    const own = fakeFamiliar(path.join(l.dir, 'own', 'familiar'), `{"version":"mine","protocolVersion":${PROTOCOL_VERSION}}`);
    const configured = await resolveFamiliar({ configured: own, extensionPath: l.ext, env: l.env });
    assert.deepEqual([configured.source, configured.version, configured.path], ['setting', 'mine', own]);
  } finally {
    fs.rmSync(l.dir, { recursive: true, force: true });
  }
});

test('without a bundled binary, familiar on PATH; a bundled one that lost its executable bit is still run', async () => {
  const l = layout();
  try {
    const onPath = await resolveFamiliar({ configured: '', extensionPath: l.ext, env: l.env });
    assert.deepEqual([onPath.source, onPath.version], ['PATH', 'on-path']);

    fakeFamiliar(bundledPath(l.ext), `{"version":"bundled","protocolVersion":${PROTOCOL_VERSION}}`);
    fs.chmodSync(bundledPath(l.ext), 0o644);
    const bundled = await resolveFamiliar({ configured: '', extensionPath: l.ext, env: l.env });
    assert.equal(bundled.source, 'bundled');
  } finally {
    fs.rmSync(l.dir, { recursive: true, force: true });
  }
});

test('a binary of another protocol is refused, naming both versions', async () => {
  const l = layout();
  try {
    fakeFamiliar(bundledPath(l.ext), `{"version":"9.0.0","protocolVersion":${PROTOCOL_VERSION + 1}}`);
    await assert.rejects(resolveFamiliar({ configured: '', extensionPath: l.ext, env: l.env }), (err: unknown) => {
      assert.ok(err instanceof BinaryError);
      assert.equal(err.kind, 'mismatch');
      assert.match(err.message, new RegExp(`speaks protocol ${PROTOCOL_VERSION + 1}; this extension speaks protocol ${PROTOCOL_VERSION}`));
      assert.match(err.message, /bundled with the extension, familiar 9\.0\.0/);
      return true;
    });
    // A familiar from before version --json prints its plain version line.
    const old = path.join(l.dir, 'old', 'familiar');
    fs.mkdirSync(path.dirname(old));
    fs.writeFileSync(old, '#!/bin/sh\necho "familiar 0.0.9"\n', { mode: 0o755 });
    await assert.rejects(resolveFamiliar({ configured: old, extensionPath: l.ext, env: l.env }), /too old to name its protocol.*speaks protocol 1/);
    // A setting that names nothing runnable is said so, not skipped.
    await assert.rejects(resolveFamiliar({ configured: path.join(l.dir, 'nope'), extensionPath: l.ext, env: l.env }), /"familiar.path" is .*nope, which is not an executable file/);
  } finally {
    fs.rmSync(l.dir, { recursive: true, force: true });
  }
});

test('the real familiar answers version --json with this extension\'s protocol', async () => {
  const { familiar } = binaries();
  const b = await resolveFamiliar({ configured: familiar, extensionPath: '/nonexistent' });
  assert.equal(b.protocolVersion, PROTOCOL_VERSION);
  assert.equal(b.source, 'setting');
});
