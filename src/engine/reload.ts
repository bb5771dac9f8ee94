// A reload of the policies (and the shadow set with them), asked for by POST /admin/reload or by
// SIGUSR2 (src/service.ts): counted, and a failure logged; the previous set keeps serving.
import type { Logger } from 'pino';
import type { LivePolicies } from '../policy/live.js';
import type { Metrics } from './metrics.js';

export type ReloadOutcome = { ok: true } | { ok: false; problems: string[] };

export async function reloadAndReport(
  policies: LivePolicies,
  shadow: LivePolicies | null,
  metrics: Metrics,
  log: Logger,
): Promise<ReloadOutcome> {
  const [outcome] = await Promise.all([policies.reload(), reloadShadow(shadow, metrics, log)]);
  metrics.reloads.inc({ result: outcome.ok ? 'success' : 'failure' });
  if (outcome.ok) log.info({ policies: policies.current().identities }, 'policies reloaded');
  else log.error({ problems: outcome.problems }, 'policy reload failed; the previous set keeps serving');
  return outcome;
}

/** The shadow set is reloaded with the serving one; its failure keeps the previous shadow set and changes no answer. */
async function reloadShadow(shadow: LivePolicies | null, metrics: Metrics, log: Logger): Promise<void> {
  if (shadow === null) return;
  const outcome = await shadow.reload();
  metrics.shadowReloads.inc({ result: outcome.ok ? 'success' : 'failure' });
  if (outcome.ok) log.info({ shadow_policies: shadow.current().identities }, 'shadow policies reloaded');
  else
    log.error(
      { problems: outcome.problems },
      'shadow policy reload failed; the previous shadow set keeps deciding beside',
    );
}
