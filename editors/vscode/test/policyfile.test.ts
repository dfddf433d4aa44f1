// familiar.policyFile's file is checked before it is sent: what familiar
// accepts passes, a misspelt key or an unknown default is named.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parsePolicy, readPolicyFile } from '../src/policyfile';

test('a policy file familiar accepts is read as it is', () => {
  assert.deepEqual(parsePolicy('{"default":"deny","allow":["Read","Bash(go test:*)"],"deny":["Bash(rm:*)"]}'), {
    policy: { default: 'deny', allow: ['Read', 'Bash(go test:*)'], deny: ['Bash(rm:*)'] },
  });
  assert.deepEqual(parsePolicy('{"allow":["Read"]}'), { policy: { default: 'ask', allow: ['Read'] } });
});

test('what is wrong with a policy file is named', () => {
  const cases: [string, RegExp][] = [
    ['{"defualt":"allow"}', /unknown key "defualt" \(known: default, allow, deny\)/],
    ['{"default":"yes"}', /"default" is "yes", not one of ask, allow, deny/],
    ['{"allow":"Read"}', /"allow" must be a list of rules/],
    ['{"deny":[""]}', /"deny" must be a list of rules/],
    ['["Read"]', /not a JSON object/],
    ['{"default":', /not valid JSON/],
  ];
  for (const [text, want] of cases) {
    const r = parsePolicy(text);
    assert.ok('error' in r && want.test(r.error), `${text}: ${JSON.stringify(r)}`);
  }
});

test('a missing policy file says so', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'familiar-policy-'));
  assert.deepEqual(readPolicyFile(path.join(dir, 'policy.json')), { error: 'no such file' });
  fs.writeFileSync(path.join(dir, 'policy.json'), '{"default":"ask"}');
  assert.deepEqual(readPolicyFile(path.join(dir, 'policy.json')), { policy: { default: 'ask' } });
  fs.rmSync(dir, { recursive: true });
});
