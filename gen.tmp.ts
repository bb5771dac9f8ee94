import { writeFileSync } from 'node:fs';
import { canonicalize, sha256 } from './src/json/canonical.js';
import { parseJson } from './src/json/parse.js';
const mk = (name: string, input: string) => {
  const canonical = canonicalize(parseJson(input));
  const h = sha256(canonical);
  writeFileSync(
    `/work/wt/approvers/test/fixtures/canonical/${name}.json`,
    JSON.stringify({ name, input, canonical, sha256: h, approval: true, hash: h }, null, 2) + '\n',
  );
};
const args = '{"order":"A-17","amount":10500.00,"note":"late"}';
mk(
  'approval-approvers-quorum',
  `{"tool":"refund","args":${args},"context":{"tenant":"acme"},"kind":"refund_over_cap","capability":{"order":"A-17","amount":10500.00},"presentation":{"order":"A-17","amount":10500.00},"approvers":{"roles":["finance"],"teams":["finance","risk"]},"quorum":2,"separate_from_requester":"team"}`,
);
mk(
  'approval-two-requirements-approvers',
  `{"tool":"refund","args":${args},"requirements":[{"kind":"confirm","capability":{"tool":"refund","args":${args}},"presentation":{"tool":"refund","args":${args}},"approvers":{"users":["cfo"]}},{"kind":"refund_over_cap","capability":{},"presentation":{},"quorum":2}]}`,
);
