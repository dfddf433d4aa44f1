import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { suggestedAnswers } from '../src/options';

const cases: [string, string, string[]][] = [
  // Inline.
  ['inline numbered after the question', 'Should I use Postgres or SQLite? 1. Postgres 2. SQLite', ['Postgres', 'SQLite']],
  ['inline with parentheses', 'Which one? 1) keep the old API 2) drop it', ['keep the old API', 'drop it']],
  ['inline with a colon', 'Pick a database: 1. Postgres 2. SQLite 3. MySQL', ['Postgres', 'SQLite', 'MySQL']],
  ['inline with commas and or', 'Which should I do: 1. rename it, 2. delete it, or 3. leave it?', ['rename it', 'delete it', 'leave it']],
  ['inline lettered in parentheses', 'How should I go on? (a) refactor first (b) fix the bug first', ['refactor first', 'fix the bug first']],
  ['inline lettered', 'Which do you prefer? a) tabs b) spaces', ['tabs', 'spaces']],
  ['inline numbers in parentheses', 'Do you want (1) a migration or (2) a fresh table?', ['a migration', 'a fresh table']],
  ['inline, the question after the list', '1. Postgres 2. SQLite — which should I use?', ['Postgres', 'SQLite']],
  ['inline, a sentence after the last option', 'Should I use Postgres or SQLite? 1. Postgres 2. SQLite. Tell me and I will go on.', ['Postgres', 'SQLite']],
  ['inline, markdown in options', 'Which? 1. **Postgres** 2. `sqlite3`', ['Postgres', 'sqlite3']],
  // Numbered lines.
  ['numbered lines', 'Which database should I use?\n1. Postgres\n2. SQLite', ['Postgres', 'SQLite']],
  ['numbered lines with )', 'Which approach?\n1) Rewrite\n2) Patch\n3) Leave it', ['Rewrite', 'Patch', 'Leave it']],
  ['numbered lines, indented', 'Options:\n  1. Keep\n  2. Remove\nWhich do you want?', ['Keep', 'Remove']],
  ['numbered lines with blank lines between', 'Which one?\n\n1. First\n\n2. Second\n', ['First', 'Second']],
  ['numbered lines, CRLF', 'Which one?\r\n1. First\r\n2. Second\r\n', ['First', 'Second']],
  ['the last list is the choice', 'I did this:\n1. Read the code\n2. Ran the tests\n\nWhat next?\n1. Merge\n2. Add more tests', ['Merge', 'Add more tests']],
  ['lettered lines', 'Which?\na) one\nb) two', ['one', 'two']],
  ['lettered lines in parentheses', 'Which?\n(a) one\n(b) two', ['one', 'two']],
  // Bulleted lines.
  ['dash bullets', 'Which should I do?\n- Add a flag\n- Change the default', ['Add a flag', 'Change the default']],
  ['star bullets', 'Would you like:\n* a unit test\n* an end-to-end test', ['a unit test', 'an end-to-end test']],
  ['dot bullets', 'Which one?\n• red\n• blue', ['red', 'blue']],
  ['duplicates dropped', 'Which?\n- red\n- red\n- blue', ['red', 'blue']],
  // No options.
  ['a plain question', 'Should I also update the README?', []],
  ['one option only', 'Which one? 1. this', []],
  ['a report with steps, no question', 'Done.\n1. Wrote notes.md\n2. Ran the tests\nAll pass.', []],
  ['a version number', 'Should I upgrade to 1.2 or stay on 1.1?', []],
  ['numbers out of order', 'Which? 2. two 1. one', []],
  ['an option too long to click', 'Which?\n1. ' + 'x'.repeat(200) + '\n2. short', []],
  ['empty text', '', []],
  ['inline numbers inside words are not options', 'Which of file1.txt or file2.txt should I keep?', []],
  ['a numbered list that is not a question, then a question without options', 'I found:\n1. a bug in a.go\n2. a typo in b.go\n\nShall I fix them?', ['a bug in a.go', 'a typo in b.go']],
];

for (const [name, text, want] of cases) {
  test(`suggested answers: ${name}`, () => {
    assert.deepEqual(suggestedAnswers(text), want);
  });
}

test('suggested answers: at most eight', () => {
  const text = 'Which?\n' + Array.from({ length: 12 }, (_, i) => `${i + 1}. option ${i + 1}`).join('\n');
  assert.equal(suggestedAnswers(text).length, 8);
});
