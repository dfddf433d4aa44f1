// Reconstructs a file's new content from its old content and the unified
// diff task/diff returns, so the diff view shows exactly what familiar
// reports (no second source of truth).

/** The part of a multi-file git patch that belongs to path (b/ side, or a/ for deletions). */
export function filePatch(patch: string, path: string): string {
  const chunks = patch.split(/^(?=diff --git )/m);
  for (const c of chunks) {
    const header = c.split('\n', 1)[0];
    if (header.endsWith(` b/${path}`) || header.startsWith(`diff --git a/${path} `)) return c;
  }
  return '';
}

/**
 * Applies the hunks of a one-file unified diff to old. Returns undefined when
 * the patch does not fit (context mismatch) or is binary.
 */
export function applyPatch(old: string, patch: string): string | undefined {
  if (/^Binary files /m.test(patch) || /^GIT binary patch/m.test(patch)) return undefined;
  const oldLines = old === '' ? [] : old.split('\n');
  // A trailing newline makes a last empty element; track it separately.
  let oldEndsNL = old.endsWith('\n');
  if (oldEndsNL) oldLines.pop();
  const out: string[] = [];
  let pos = 0; // index into oldLines
  let newEndsNL = oldEndsNL;
  const lines = patch.split('\n');
  let i = 0;
  while (i < lines.length && !lines[i].startsWith('@@')) i++;
  if (i === lines.length) return old; // no hunks: mode change, rename only
  while (i < lines.length) {
    const h = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(lines[i]);
    if (!h) {
      i++;
      continue;
    }
    const oldStart = Number(h[1]);
    const oldCount = h[2] === undefined ? 1 : Number(h[2]);
    const from = oldCount === 0 ? oldStart : oldStart - 1;
    if (from < pos || from > oldLines.length) return undefined;
    while (pos < from) out.push(oldLines[pos++]);
    i++;
    let last: 'old' | 'new' | 'both' = 'both';
    for (; i < lines.length && !lines[i].startsWith('@@') && !lines[i].startsWith('diff --git '); i++) {
      const l = lines[i];
      if (l.startsWith('\\')) {
        // "\ No newline at end of file" applies to the line before it.
        if (last === 'old' || last === 'both') oldEndsNL = false;
        if (last === 'new' || last === 'both') newEndsNL = false;
        continue;
      }
      const tag = l[0], text = l.slice(1);
      if (tag === ' ') {
        if (oldLines[pos] !== text) return undefined;
        out.push(text);
        pos++;
        last = 'both';
        newEndsNL = true;
      } else if (tag === '-') {
        if (oldLines[pos] !== text) return undefined;
        pos++;
        last = 'old';
      } else if (tag === '+') {
        out.push(text);
        last = 'new';
        newEndsNL = true;
      } else if (l === '') {
        // The split's tail, or an empty context line some tools emit bare.
        continue;
      }
    }
  }
  while (pos < oldLines.length) {
    out.push(oldLines[pos++]);
    newEndsNL = oldEndsNL;
  }
  if (out.length === 0) return '';
  return out.join('\n') + (newEndsNL ? '\n' : '');
}
