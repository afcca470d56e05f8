/**
 * Signs lockgate proofs, format 1 (docs/proofs.md), from Node: the same proofs lockgate's
 * Python client makes, checked against the same conformance vectors (docs/proof-vectors.json).
 *
 * Canonical JSON and Ed25519 signing come from one source shared with the inbox's pages
 * (lockgate/inbox/static/proofs.js, on WebCrypto); this module adds the bindings, digests and a
 * {@link Signer}. It depends on nothing but Node (18.4 or later: Ed25519 in WebCrypto).
 *
 * @example
 * const signer = await Signer.fromPem("shop-service", fs.readFileSync("shop-service.key", "utf8"));
 * const proof = await signer.sign(startBinding("essay:review", runId, execution, inputs));
 */

import { createHash, webcrypto } from "node:crypto";

import {
  PROOF_FORMAT,
  byCodePoint,
  canon,
  importPrivateKey,
  signWithKey,
  unsignedProof,
  type Proof,
  type UnsignedProof,
} from "./proofs";

// The shared source signs with the global WebCrypto, which Node 18 has only under node:crypto.
if (globalThis.crypto === undefined) {
  Object.defineProperty(globalThis, "crypto", { value: webcrypto, configurable: true });
}

export { PROOF_FORMAT, canon as canonicalJson, type Proof, type UnsignedProof };

/** JSON data, as a binding holds it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What a proof authorizes: an act with a string `kind`. */
export type Binding = { kind: string } & { [key: string]: Json };

/** `"sha256:"` and the lowercase hex SHA-256 of `value`'s canonical JSON. */
export function digest(value: unknown): string {
  return "sha256:" + createHash("sha256").update(canon(value), "utf8").digest("hex");
}

/**
 * Starting execution `execution` of run `run` of `graph` with exactly these inputs. `version` is
 * the graph version to run, or null for the newest its workers serve. A workflow of your own
 * names its arguments as `{ args: [...] }`.
 */
export function startBinding(
  graph: string,
  run: string,
  execution: string,
  inputs: { [key: string]: Json },
  version: number | null = null,
): Binding {
  return { kind: "start", graph, run, execution, version, inputs: digest(inputs) };
}

/** One option of a gate, as its run shows it. */
export interface GateChoice {
  option: string;
  leads_to: string | null;
  operation: string | null;
  needs: string[];
}

/** The digest of what an approver is shown at a gate: its target and its options. */
export function gateSubject(target: { [key: string]: Json } | null, choices: GateChoice[]): string {
  const shown = choices.map((choice) => ({
    option: choice.option ?? null,
    leads_to: choice.leads_to ?? null,
    operation: choice.operation ?? null,
    needs: [...(choice.needs ?? [])].sort(byCodePoint),
  }));
  return digest({ target, choices: shown });
}

/**
 * Answering the gate opening `gate` (`editor_call#2`) of `run` with `choice`. `subject` is
 * {@link gateSubject} of what the approver was shown; `evidence`, `waiver` and `comment` (what the
 * approver says with the answer: kept in the trail, deciding nothing) are named only when given.
 */
export function decideBinding(
  graph: string,
  run: string,
  execution: string,
  gate: string,
  choice: string,
  subject: string,
  evidence?: { [key: string]: Json } | null,
  waiver?: string | null,
  comment?: string | null,
): Binding {
  const binding: Binding = { kind: "decide", graph, run, execution, gate, choice, subject };
  if (evidence !== undefined && evidence !== null) binding.evidence = evidence;
  if (waiver !== undefined && waiver !== null) binding.waiver = waiver;
  if (comment !== undefined && comment !== null) binding.comment = comment;
  return binding;
}

/** The open gate as a run's memo (`lockgate_gate`) shows it. */
export interface ShownGate {
  graph: string;
  run_id: string;
  execution: string;
  gate: string;
  target?: { [key: string]: Json } | null;
  choices: GateChoice[];
}

/**
 * The {@link decideBinding} of answering `choice` to `gate` as it was shown, in `execution` (the
 * first run id the Temporal server reports, never one the run says). The subject is computed
 * here from what was shown, never copied from the run.
 */
export function answerBinding(
  gate: ShownGate,
  choice: string,
  execution: string,
  evidence?: { [key: string]: Json } | null,
  waiver?: string | null,
  comment?: string | null,
): Binding {
  const subject = gateSubject(gate.target ?? null, gate.choices);
  return decideBinding(
    gate.graph, gate.run_id, execution, gate.gate, choice, subject, evidence, waiver, comment,
  );
}

/** Resuming execution `execution` of `run`, parked at `node`. */
export function resumeBinding(graph: string, run: string, execution: string, node: string | null): Binding {
  return { kind: "resume", graph, run, execution, node };
}

/** Cancelling execution `execution` of `run`, for `reason` (null: none given). */
export function cancelBinding(graph: string, run: string, execution: string, reason: string | null = null): Binding {
  return { kind: "cancel", graph, run, execution, reason };
}

/** Calling `tool` with exactly these arguments, as execution `execution` of call `request`. */
export function toolBinding(
  tool: string,
  args: { [key: string]: Json },
  request: string,
  execution: string,
): Binding {
  return { kind: "tool", tool, arguments: digest(args), request, execution };
}

/**
 * A schedule grant: every run Temporal Schedule `schedule` starts of `graph`, with exactly these
 * inputs, from unix second `notBefore` to `notAfter` (both included). It names no execution: each
 * run proves on the worker that this schedule started it, inside the window.
 */
export function scheduleBinding(
  graph: string,
  schedule: string,
  inputs: { [key: string]: Json },
  notBefore: number,
  notAfter: number,
  version: number | null = null,
): Binding {
  return {
    kind: "schedule",
    graph,
    schedule,
    version,
    inputs: digest(inputs),
    not_before: notBefore,
    not_after: notAfter,
  };
}

/** Confirming durable call `request` with the token it handed out. */
export function confirmBinding(request: string, token: string): Binding {
  return { kind: "confirm", request, token };
}

/** Options of a {@link Signer}. */
export interface SignerOptions {
  /**
   * Where the proofs come from, recorded in each (default `"cli"`, as lockgate's Python signer):
   * the worker applies that channel's policy to what the proofs do.
   */
  channel?: string;
  /** Unix milliseconds now (default `Date.now`). */
  clock?: () => number;
  /** A fresh nonce of 32 lowercase hex characters (default: 16 random bytes). */
  nonce?: () => string;
}

const NAME = /^[A-Za-z0-9._@:-]{1,128}$/;

/** Signs proofs as one principal, with its Ed25519 private key. */
export class Signer {
  readonly principal: string;
  readonly channel: string;
  private readonly key: CryptoKey;
  private readonly clock: () => number;
  private readonly nonce: (() => string) | undefined;

  /** Use {@link Signer.fromPem}. */
  constructor(principal: string, key: CryptoKey, options: SignerOptions = {}) {
    const channel = options.channel ?? "cli";
    if (!NAME.test(principal) || principal.startsWith("unverified:")) {
      throw new TypeError(`${JSON.stringify(principal)} is not a principal name: use letters, digits and . _ @ : - only.`);
    }
    if (!NAME.test(channel)) {
      throw new TypeError(`${JSON.stringify(channel)} is not a channel name: use letters, digits and . _ @ : - only.`);
    }
    this.principal = principal;
    this.channel = channel;
    this.key = key;
    this.clock = options.clock ?? Date.now;
    this.nonce = options.nonce;
  }

  /** A signer from the principal's PKCS8 PEM key (the file `lockgate keys new` writes). */
  static async fromPem(principal: string, pem: string, options: SignerOptions = {}): Promise<Signer> {
    let key: CryptoKey;
    try {
      key = await importPrivateKey(pem);
    } catch {
      throw new TypeError("This is not an Ed25519 private key in PKCS8 PEM (the file `lockgate keys new` writes).");
    }
    return new Signer(principal, key, options);
  }

  /** A fresh proof that this principal authorizes `authorizes`. */
  async sign(authorizes: Binding): Promise<Proof> {
    if (typeof authorizes?.kind !== "string" || !authorizes.kind) {
      throw new TypeError("A proof authorizes an act with a non-empty string `kind`.");
    }
    const issuedAt = Math.floor(this.clock() / 1000);
    const unsigned = unsignedProof(this.principal, this.channel, authorizes, issuedAt, this.nonce?.());
    return signWithKey(unsigned, this.key);
  }
}
