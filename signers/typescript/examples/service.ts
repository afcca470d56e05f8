/**
 * A Node service that starts gated lockgate runs, answers gates and calls tools, signing as the
 * principals whose keys it holds (`lockgate keys new NAME` writes them).
 *
 *   node dist/examples/service.js start GRAPH INPUTS_JSON --as NAME
 *   node dist/examples/service.js decide RUN CHOICE --as NAME
 *   node dist/examples/service.js call TOOL ARGUMENTS_JSON --as NAME
 *
 * Settings: TEMPORAL_ADDRESS (localhost:7233), TEMPORAL_NAMESPACE (default), LOCKGATE_TASK_QUEUE
 * (lockgate), LOCKGATE_KEYS_DIR (~/.lockgate/keys). Prints what the worker answered as JSON; a
 * refusal ({"ok": false, ...}, or a tool's {"success": false, ...}) exits with status 1.
 */

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

import { Client, Connection } from "@temporalio/client";

import { Signer } from "../src/index";
import { Refused, callTool, decide, startRun } from "./lockgate";

async function main(argv: string[]): Promise<number> {
  const [command, first, second, flag, name] = argv;
  if (!["start", "decide", "call"].includes(command) || flag !== "--as" || !name) {
    process.stderr.write("usage: service.js start GRAPH INPUTS_JSON | decide RUN CHOICE | call TOOL ARGS_JSON --as NAME\n");
    return 2;
  }
  const keys = process.env.LOCKGATE_KEYS_DIR ?? join(homedir(), ".lockgate", "keys");
  const signer = await Signer.fromPem(name, readFileSync(join(keys, `${name}.key`), "utf8"));
  const taskQueue = process.env.LOCKGATE_TASK_QUEUE ?? "lockgate";
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? "localhost:7233" });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? "default" });
  try {
    const answer =
      command === "start"
        ? await startRun(client, signer, { graph: first, inputs: JSON.parse(second), taskQueue })
        : command === "decide"
          ? await decide(client, signer, first, second, taskQueue)
          : await callTool(client, signer, { tool: first, args: JSON.parse(second), taskQueue });
    process.stdout.write(JSON.stringify(answer) + "\n");
    return answer.ok === false || answer.success === false ? 1 : 0;
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    const refusal = { ok: false, error: { code: error.code, message: error.message }, run_id: error.runId };
    process.stdout.write(JSON.stringify(refusal) + "\n");
    return 1;
  } finally {
    await connection.close();
  }
}

main(process.argv.slice(2)).then((status) => process.exit(status));
