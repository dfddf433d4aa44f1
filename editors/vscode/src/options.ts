// The answers an agent suggests in a prose question, for one-click buttons:
// "1. Postgres 2. SQLite" on one line as well as numbered or bulleted lines.
// familiar reads options on lines of their own (Question.options); a model
// often writes them inline, and then the person had to type the answer.
// Pure, so the fast tests cover it.

/** At most this many suggested answers become buttons: more is a list, not a choice. */
const maxOptions = 8;
/** An option longer than this is a paragraph, not an answer to click. */
const maxLength = 120;

/**
 * The options a question's text lists, in order, without their numbers or
 * bullets; [] when it lists none (fewer than two, or the list is prose:
 * a numbered list of steps the agent took is not a choice, so a list only
 * counts when the text asks something — a "?" or an "or" — before it or
 * after it).
 */
export function suggestedAnswers(text: string): string[] {
  const s = text.replace(/\r\n?/g, '\n');
  return lineOptions(s) ?? inlineOptions(s) ?? [];
}

// Numbered ("1." "1)" "(1)"), lettered ("a)" "(a)" "A.") and bulleted ("-" "*" "•") lines.
const linePattern = /^[ \t]*(?:\(?(\d{1,2})[.)]|\(([a-zA-Z])\)|([a-hA-H])[.)]|([-*•]))[ \t]+(.+?)\s*$/;

function lineOptions(s: string): string[] | undefined {
  const lines = s.split('\n');
  // The last run of list lines: a question's choices come at its end, after any steps.
  let best: { start: number; items: string[] } | undefined;
  let run: { start: number; items: string[]; kind: string; next?: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const m = linePattern.exec(lines[i]);
    if (!m) {
      if (lines[i].trim() === '' && run) continue; // a blank line between items keeps the run
      if (run && run.items.length >= 2) best = run;
      run = undefined;
      continue;
    }
    const kind = m[1] ? 'num' : m[2] ? 'paren' : m[3] ? 'letter' : 'bullet';
    const n = m[1] ? Number(m[1]) : undefined;
    if (!run || run.kind !== kind || (n !== undefined && run.next !== undefined && n !== run.next)) {
      if (run && run.items.length >= 2) best = run;
      run = { start: i, items: [], kind };
    }
    run.items.push(m[5]);
    if (n !== undefined) run.next = n + 1;
  }
  if (run && run.items.length >= 2) best = run;
  if (!best) return undefined;
  const before = lines.slice(0, best.start).join('\n');
  const after = lines.slice(best.start + best.items.length).join('\n');
  if (!asks(before) && !asks(after) && !best.items.some((x) => /\?\s*$/.test(x))) return undefined;
  return clean(best.items);
}

/**
 * "Should I use Postgres or SQLite? 1. Postgres 2. SQLite", "(a) keep it
 * (b) drop it", "1) yes, 2) no": numbers (or letters) counting up from the
 * first, each followed by its words up to the next.
 */
function inlineOptions(s: string): string[] | undefined {
  for (const re of [/(?:^|[\s:;,?!(])\(?(\d{1,2})[.)](?=\s)/g, /(?:^|[\s:;,?!])\(([a-h])\)(?=\s)/g, /(?:^|[\s:;,?!])([a-h])\)(?=\s)/g]) {
    const marks: { at: number; end: number; key: string }[] = [];
    for (const m of s.matchAll(re)) {
      const lead = m[0].length - m[0].trimStart().length;
      marks.push({ at: m.index! + lead, end: m.index! + m[0].length, key: m[1] });
    }
    // The longest run counting up by one from 1 (or a): 1. … 2. … 3. …
    let run: typeof marks = [];
    for (let i = 0; i < marks.length; i++) {
      if (!isFirst(marks[i].key)) continue;
      const r = [marks[i]];
      for (let j = i + 1; j < marks.length; j++) if (follows(r[r.length - 1].key, marks[j].key)) r.push(marks[j]);
      if (r.length > run.length) run = r;
    }
    if (run.length < 2) continue;
    const items = run.map((m, i) => {
      const end = i + 1 < run.length ? run[i + 1].at : lastEnd(s, m.end);
      return s.slice(m.end, end).trim().replace(/[,;]\s*(or|and)?\s*$/i, '').replace(/\s+(or|and)$/i, '').trim();
    });
    const before = s.slice(0, run[0].at);
    const after = s.slice(lastEnd(s, run[run.length - 1].end));
    if (!asks(before) && !asks(after) && !items.some((x) => /\?$/.test(x))) continue;
    const out = clean(items);
    if (out.length >= 2) return out;
  }
  return undefined;
}

/** Where the last inline option ends: its sentence (a "?", or ". " before a capital), its line. */
function lastEnd(s: string, from: number): number {
  const rest = s.slice(from);
  const m = /\?|\.(?=\s+[A-Z])|\s[—–]\s|\n/.exec(rest);
  return m ? from + m.index : s.length;
}

function isFirst(k: string): boolean {
  return k === '1' || k === 'a';
}

function follows(a: string, b: string): boolean {
  if (/^\d+$/.test(a)) return Number(b) === Number(a) + 1;
  return b.charCodeAt(0) === a.charCodeAt(0) + 1;
}

/** Whether text asks something: a question mark, or "or"/"which"/"prefer" words. */
function asks(text: string): boolean {
  return /\?/.test(text) || /\b(which|prefer|choose|pick|option|would you like|should i|do you want)\b/i.test(text);
}

function clean(items: string[]): string[] {
  const out: string[] = [];
  for (let x of items) {
    x = x.replace(/\*\*([^*]+)\*\*/g, '$1').replace(/`([^`]+)`/g, '$1').replace(/[.?!:]+$/, '').trim();
    if (!x || x.length > maxLength) return [];
    if (!out.includes(x)) out.push(x);
  }
  return out.length >= 2 ? out.slice(0, maxOptions) : [];
}
