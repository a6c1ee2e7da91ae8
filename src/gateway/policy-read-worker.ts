/**
 * A policy reload's reading, off the gateway's event loop: parsing a large YAML file and
 * validating it take from milliseconds to seconds (bench/RESULTS.md, "Policy reload"), which
 * every stream would wait on the loop for its next token. It gets the file and the running
 * policy's document, reads and plans (`planReload`), answers once, and exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { resolvePolicy } from '../core/config/policy.ts';
import { isConfigError } from '../core/errors.ts';
import { readPolicyFile } from '../sim/policy-source.ts';
import type { PolicyRead, PolicyReadReply } from './policy-reloader.ts';
import { planReload } from './reload-plan.ts';

if (parentPort === null) throw new Error('policy-read-worker runs as a worker thread');
const { file, runningDoc } = workerData as PolicyRead;

function read(): PolicyReadReply {
  try {
    const next = readPolicyFile(file);
    const plan = planReload({ doc: runningDoc, policy: resolvePolicy(runningDoc) }, next);
    const { tenants, revision } = next.policy;
    return {
      ok: true,
      plan,
      doc: next.doc,
      revision,
      named: tenants.named,
      fallback: tenants.fallback,
    };
  } catch (e) {
    if (!isConfigError(e)) throw e;
    return { ok: false, message: e.message, path: e.path };
  }
}

parentPort.postMessage(read());
