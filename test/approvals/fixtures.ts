// Inputs for store.create: a request, its descriptor (hash computed as the policy layer does) and
// a requester. Arguments are parsed with the strict parser so number lexemes are kept, as in the service.
import { approvalHash } from '../../src/json/canonical.js';
import { parseJson } from '../../src/json/parse.js';
import { isJsonObject } from '../../src/json/value.js';
import type { JsonObject } from '../../src/json/value.js';
import type { CreateApprovalInput } from '../../src/approvals/store.js';

export function json(text: string): JsonObject {
  const value = parseJson(text);
  if (!isJsonObject(value)) throw new Error('fixture is not an object');
  return value;
}

export interface RequestSpec {
  tool?: string;
  args?: string; // JSON text
  kind?: string;
  presentation?: string; // JSON text
  sub?: string;
}

export function request(spec: RequestSpec = {}): CreateApprovalInput {
  const tool = spec.tool ?? 'refund';
  const args = json(spec.args ?? '{"order":"A1","amount":120.50}');
  const kind = spec.kind ?? 'refund_over_cap';
  const capability = json('{"amount":120.50}');
  const presentation =
    spec.presentation === undefined ? json('{"summary":"refund 120.50 on A1"}') : json(spec.presentation);
  const requirement = {
    policy: 'payments',
    rule: 'refund-support',
    kind,
    reason: 'refund over 100 needs an operator',
    capability,
    presentation,
  };
  return {
    descriptor: {
      kind,
      capability,
      presentation,
      requirements: [requirement],
      hash: approvalHash({ tool, args, kind, capability, presentation }),
    },
    tool,
    args,
    requester: { sub: spec.sub ?? 'agent-user-1', team: 'support', agent: 'helpdesk', name: null },
    policies: [{ policy: 'payments', version: '3', digest: 'sha256:' + 'ab'.repeat(32) }],
  };
}
