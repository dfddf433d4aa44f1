// Reads the extension host's profiles that FAMILIAR_VSCODE_PROFILE=<prefix>
// makes (ui.ts profileHost; the harness passes the variable on) and says
// what held its event loop: each stretch of 30 ms or more without a pause,
// by what ran in it, and what allocated the most (the extension's frames
// first, else the host's).
// Usage: node test/ui/profile-summary.mjs <prefix>.NN.cpuprofile ... <prefix>.NN.heapprofile ...

import * as fs from 'node:fs';

const frame = (cf) => `${cf.functionName || '(anonymous)'} ${cf.url.split('/').pop()}:${cf.lineNumber + 1}`;
const ours = (s) => /extension\.js/.test(s);

function cpu(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stack = (id) => {
    const out = [];
    for (let x = id; x !== undefined; x = parent.get(x)) out.push(frame(byId.get(x).callFrame));
    return out;
  };
  let t = p.startTime, busy = 0, from, run = [];
  console.log(`== ${file}`);
  const end = (at) => {
    if (from !== undefined && at - from >= 30000) {
      const by = new Map();
      for (const [id, dt] of run) {
        const st = stack(id);
        const k = st[0] + (st.some(ours) ? ' <- ' + st.filter(ours).slice(0, 3).join(' < ') : '');
        by.set(k, (by.get(k) ?? 0) + dt);
      }
      console.log(`  ${((at - from) / 1000).toFixed(0)} ms at +${((from - p.startTime) / 1e6).toFixed(2)} s:`);
      for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`    ${(v / 1000).toFixed(1).padStart(6)} ms ${k}`);
    }
    from = undefined;
    run = [];
  };
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i];
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (byId.get(p.samples[i]).callFrame.functionName === '(idle)') {
      end(t);
      continue;
    }
    busy += dt;
    from ??= t;
    run.push([p.samples[i], dt]);
  }
  end(t);
  console.log(`  busy ${(busy / 1000).toFixed(0)} of ${((t - p.startTime) / 1000).toFixed(0)} ms`);
}

function heap(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const by = new Map();
  let total = 0;
  const walk = (n, st) => {
    const s = [frame(n.callFrame), ...st];
    if (n.selfSize) {
      total += n.selfSize;
      const mine = s.filter(ours);
      const k = mine.length ? 'extension: ' + mine.slice(0, 3).join(' < ') : 'host: ' + s.slice(0, 3).join(' < ');
      by.set(k, (by.get(k) ?? 0) + n.selfSize);
    }
    for (const c of n.children ?? []) walk(c, s);
  };
  walk(p.head, []);
  console.log(`== ${file}: ${(total / 1e6).toFixed(1)} MB allocated (sampled, the collected included)`);
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${(v / 1e6).toFixed(2).padStart(6)} MB ${k}`);
}

for (const f of process.argv.slice(2)) (f.endsWith('.heapprofile') ? heap : cpu)(f);
