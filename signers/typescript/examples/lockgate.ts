/**
 * A service's side of lockgate on Temporal, with @temporalio/client: start a gated graph run as
 * the service, answer its gate as an approver, call a tool durably (docs/proofs.md §5).
 *
 * Every proof names the execution the Temporal server reports (the start's first execution run
 * id, a description's first run id), never one a run says: so a run is started first, held
 * back, and signed for second.
 */

import { randomUUID } from "node:crypto";

import { Client, WorkflowUpdateFailedError } from "@temporalio/client";
import type { WorkflowExecutionDescription, WorkflowHandle } from "@temporalio/client";

import { Signer, answerBinding, startBinding, toolBinding } from "../src/index";
import type { Json, Proof, ShownGate } from "../src/index";

/** How long a held-back run waits for its proof (the proof ends the wait). */
const PROOF_WITHIN = "5 minutes";

/** A refusal from a lockgate worker: its code and the sentence saying why. */
export class Refused extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly runId?: string,
  ) {
    super(message);
  }
}

/**
 * Sends a proof to the execution the start made; if it is refused, asks that execution to end
 * (it ran nothing, and without a proof never will: it ends refused at once, not in five minutes).
 */
async function proven(
  run: WorkflowHandle,
  update: string,
  proof: Proof,
): Promise<Record<string, unknown>> {
  try {
    return await updated(() => run.executeUpdate(update, { args: [proof] }));
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    await run.cancel().catch(() => undefined);
    throw new Refused(error.code, error.message, run.workflowId);
  }
}

async function updated(run: () => Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    return (await run()) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError) {
      const cause = error.cause as { type?: string; message?: string } | undefined;
      throw new Refused(cause?.type ?? "REFUSED", cause?.message ?? error.message);
    }
    throw error;
  }
}

/** Starts a run of `graph` with `inputs`, signed by `signer`; returns the run once it settles. */
export async function startRun(
  client: Client,
  signer: Signer,
  options: { graph: string; taskQueue: string; inputs: { [key: string]: Json }; runId?: string },
): Promise<Record<string, unknown>> {
  const runId = options.runId ?? `${options.graph}-${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const handle = await client.workflow.start(options.graph, {
    taskQueue: options.taskQueue,
    workflowId: runId,
    args: [{ inputs: options.inputs, channel: signer.channel, signed: true }],
    startDelay: PROOF_WITHIN,
    workflowIdConflictPolicy: "FAIL",
  });
  const execution = handle.firstExecutionRunId;
  const proof = await signer.sign(startBinding(options.graph, runId, execution, options.inputs));
  const run = client.workflow.getHandle(runId, execution);
  return proven(run, "start", proof);
}

/** The gate open on `runId` as the server and its run's memo show it, and its execution. */
export async function openGate(
  client: Client,
  runId: string,
  taskQueue: string,
): Promise<{ gate: ShownGate; execution: string }> {
  const description: WorkflowExecutionDescription = await client.workflow.getHandle(runId).describe();
  const execution = description.raw.workflowExecutionInfo?.firstRunId ?? "";
  if (description.taskQueue !== taskQueue) {
    throw new Refused("NOT_FOUND", `Run '${runId}' runs on task queue '${description.taskQueue}', not '${taskQueue}'.`);
  }
  const gate = (description.memo ?? {}).lockgate_gate as ShownGate | undefined;
  // The memo is the run's word; believed only where it names what the server vouches for.
  if (!gate || gate.graph !== description.type || gate.run_id !== runId || gate.execution !== execution) {
    throw new Refused("GATE_NOT_PENDING", `Run '${runId}' is not waiting for a decision.`);
  }
  return { gate, execution };
}

/** Sends a signed answer to `runId`'s `decide` update; returns the run once it settles. */
export async function sendDecision(client: Client, runId: string, proof: Proof): Promise<Record<string, unknown>> {
  return updated(() => client.workflow.getHandle(runId).executeUpdate("decide", { args: [proof] }));
}

/** Answers the gate open on `runId` with `choice`, as `signer`. */
export async function decide(
  client: Client,
  signer: Signer,
  runId: string,
  choice: string,
  taskQueue: string,
): Promise<Record<string, unknown>> {
  const { gate, execution } = await openGate(client, runId, taskQueue);
  return sendDecision(client, runId, await signer.sign(answerBinding(gate, choice, execution)));
}

/** Calls `tool` with `args` durably, as `signer`: once per request id, however often asked. */
export async function callTool(
  client: Client,
  signer: Signer,
  options: { tool: string; args: { [key: string]: Json }; taskQueue: string; requestId?: string },
): Promise<Record<string, unknown>> {
  const requestId = options.requestId ?? randomUUID().replace(/-/g, "");
  const handle = await client.workflow.start("lockgate.tool_call", {
    taskQueue: options.taskQueue,
    workflowId: `lockgate-call-${requestId}`,
    args: [{ tool: options.tool, arguments: options.args, request_id: requestId, channel: signer.channel, signed: true }],
    startDelay: PROOF_WITHIN,
    workflowIdConflictPolicy: "FAIL",
    workflowIdReusePolicy: "REJECT_DUPLICATE",
  });
  const execution = handle.firstExecutionRunId;
  const proof = await signer.sign(toolBinding(options.tool, options.args, requestId, execution));
  return proven(client.workflow.getHandle(handle.workflowId, execution), "call", proof);
}
