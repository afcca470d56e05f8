// The TypeScript signer against lockgate's conformance vectors (docs/proof-vectors.json), the
// same file lockgate's Python tests check its own signer and verifier against.
"use strict";

const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { test } = require("node:test");

const signer = require("../dist/src/index.js");

const VECTORS = JSON.parse(
  fs.readFileSync(path.join(__dirname, "..", "..", "..", "docs", "proof-vectors.json"), "utf8"),
);

function bindingOf(kind, a) {
  switch (kind) {
    case "start":
      return signer.startBinding(a.graph, a.run, a.execution, a.inputs, a.version);
    case "decide":
      return signer.decideBinding(
        a.graph, a.run, a.execution, a.gate, a.choice, signer.gateSubject(a.target, a.choices),
        a.evidence, a.waiver, a.comment,
      );
    case "resume":
      return signer.resumeBinding(a.graph, a.run, a.execution, a.node);
    case "cancel":
      return signer.cancelBinding(a.graph, a.run, a.execution, a.reason);
    case "tool":
      return signer.toolBinding(a.tool, a.arguments, a.request, a.execution);
    case "confirm":
      return signer.confirmBinding(a.request, a.token);
    case "schedule":
      return signer.scheduleBinding(
        a.graph, a.schedule, a.inputs, a.not_before, a.not_after, a.version,
      );
    default:
      throw new Error("no binding of kind " + kind);
  }
}

test("the vectors are format 1, the format this signer writes", () => {
  assert.equal(VECTORS.format, "lockgate_proof 1");
  assert.equal(signer.PROOF_FORMAT, 1);
});

for (const item of VECTORS.canonical) {
  test(`canonical JSON: ${item.name}`, () => {
    assert.equal(signer.canonicalJson(item.value), item.canonical);
    assert.equal(signer.digest(item.value), item.digest);
  });
}

for (const item of VECTORS.refused_canonical) {
  test(`canonical JSON refuses ${item.name}`, () => {
    assert.throws(() => signer.canonicalJson(JSON.parse(item.value_json)), TypeError);
  });
}

test("canonical JSON refuses what the worker would write otherwise", () => {
  for (const value of [NaN, Infinity, 0.00001, 1e-7, undefined, () => 1, 10n]) {
    assert.throws(() => signer.canonicalJson({ value }), TypeError, String(value));
  }
});

for (const vector of VECTORS.proofs) {
  test(`the binding functions make the vector's act: ${vector.name}`, () => {
    assert.deepEqual(bindingOf(vector.binding.kind, vector.binding.arguments), vector.authorizes);
  });

  test(`the canonical bytes and their digest: ${vector.name}`, () => {
    assert.equal(signer.canonicalJson(vector.unsigned), vector.canonical);
    const sha = crypto.createHash("sha256").update(vector.canonical, "utf8").digest("hex");
    assert.equal(sha, vector.sha256);
  });

  test(`the signer makes the vector byte for byte: ${vector.name}`, async () => {
    const made = await signer.Signer.fromPem(VECTORS.key.principal, VECTORS.key.private_key_pem, {
      channel: vector.unsigned.channel,
      clock: () => vector.unsigned.issued_at * 1000 + 999,
      nonce: () => vector.unsigned.nonce,
    });
    const proof = await made.sign(bindingOf(vector.binding.kind, vector.binding.arguments));
    assert.deepEqual(proof, vector.proof);
    assert.equal(JSON.stringify(proof), JSON.stringify(vector.proof));
  });
}

test("a signature made here verifies with the public key the Directory lists", async () => {
  const made = await signer.Signer.fromPem(VECTORS.key.principal, VECTORS.key.private_key_pem);
  const proof = await made.sign(signer.resumeBinding("essay:review", "essay:review-1", "exec-1", "publish"));
  const { signature, ...unsigned } = proof;
  assert.match(unsigned.nonce, /^[0-9a-f]{32}$/);
  assert.ok(Math.abs(unsigned.issued_at - Date.now() / 1000) < 5);
  const raw = Buffer.from(VECTORS.key.public_key.slice("ed25519:".length), "base64url");
  const publicKey = crypto.createPublicKey({
    key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]),
    format: "der",
    type: "spki",
  });
  const bytes = Buffer.from(signer.canonicalJson(unsigned), "utf8");
  assert.ok(crypto.verify(null, bytes, publicKey, Buffer.from(signature, "base64url")));
  assert.ok(!crypto.verify(null, Buffer.concat([bytes, Buffer.from(" ")]), publicKey, Buffer.from(signature, "base64url")));
});

test("a key that is not an Ed25519 PKCS8 PEM is refused with a sentence", async () => {
  await assert.rejects(signer.Signer.fromPem("shop-service", "not a key"), /not an Ed25519 private key/);
});

test("names the worker would refuse are refused before anything is signed", async () => {
  await assert.rejects(signer.Signer.fromPem("unverified:x", VECTORS.key.private_key_pem), /not a principal name/);
  await assert.rejects(
    signer.Signer.fromPem("shop-service", VECTORS.key.private_key_pem, { channel: "a b" }),
    /not a channel name/,
  );
});
