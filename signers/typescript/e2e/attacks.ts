/**
 * Decisions signed here for another run, gate, execution or choice than the one waiting, sent
 * to a live run's gate: each must be refused by the worker (tests/clients/test_typescript_signer.py
 * runs this against a run the example service started).
 *
 *   node dist/e2e/attacks.js RUN APPROVER STARTER
 *
 * Prints {attack: {code, message} | "accepted"} as JSON.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";

import { Client, Connection } from "@temporalio/client";

import { Signer, answerBinding } from "../src/index";
import type { Proof, ShownGate } from "../src/index";
import { Refused, openGate, sendDecision } from "../examples/lockgate";

async function main([runId, approver, starter]: string[]): Promise<void> {
  const keys = process.env.LOCKGATE_KEYS_DIR ?? "";
  const signerOf = (name: string) => Signer.fromPem(name, readFileSync(join(keys, `${name}.key`), "utf8"));
  const [ed, owner] = [await signerOf(approver), await signerOf(starter)];
  const taskQueue = process.env.LOCKGATE_TASK_QUEUE ?? "lockgate";
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? "localhost:7233" });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? "default" });
  const { gate, execution } = await openGate(client, runId, taskQueue);
  const choice = "publish_as_is";
  const sign = (shown: ShownGate, option: string, where = execution, as = ed) =>
    as.sign(answerBinding(shown, option, where));
  const altered = async (): Promise<Proof> => {
    const proof = await sign(gate, "abandon");
    return { ...proof, authorizes: { ...proof.authorizes, choice } };
  };
  const attacks: Record<string, () => Promise<Proof>> = {
    another_run: () => sign({ ...gate, run_id: `${gate.graph}-000000000000` }, choice),
    another_gate: () => sign({ ...gate, gate: gate.gate.replace(/#\d+$/, "#99") }, choice),
    another_execution: () => sign(gate, choice, execution.replace(/.$/, (c) => (c === "0" ? "1" : "0"))),
    another_target: () => sign({ ...gate, target: { title: "Another essay" } }, choice),
    choice_changed_after_signing: altered,
    choice_not_offered: () => sign(gate, "publish_now"),
    the_starter_answering: () => sign(gate, choice, execution, owner),
  };
  const outcomes: Record<string, unknown> = {};
  try {
    for (const [name, forge] of Object.entries(attacks)) {
      try {
        await sendDecision(client, runId, await forge());
        outcomes[name] = "accepted";
      } catch (error) {
        if (!(error instanceof Refused)) throw error;
        outcomes[name] = { code: error.code, message: error.message };
      }
    }
  } finally {
    await connection.close();
  }
  process.stdout.write(JSON.stringify(outcomes) + "\n");
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(String(error?.stack ?? error) + "\n");
  process.exit(1);
});
