// lockgate proofs, format 1 (docs/proofs.md): canonical JSON and Ed25519 signing with WebCrypto.
// One source for two users: the inbox's pages load it as a classic script (its functions are
// globals beside inbox.js), and the TypeScript signer (signers/typescript) copies it into its
// build, where it is a CommonJS module. Nothing here touches the page or Node's own APIs:
// `crypto.subtle`, `TextEncoder` and `btoa` are in both.
"use strict";

const PROOF_FORMAT = 1;

// Python's sort_keys order: by Unicode code point (JavaScript's sort() compares UTF-16 units,
// which puts keys above U+FFFF before those from U+E000 to U+FFFF).
function byCodePoint(left, right) {
  const a = Array.from(left, (c) => c.codePointAt(0));
  const b = Array.from(right, (c) => c.codePointAt(0));
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return a.length - b.length;
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const UNPAIRED = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function wellFormed(text) {
  if (UNPAIRED.test(text)) throw new TypeError("text with an unpaired surrogate is not JSON a proof can name");
  return text;
}

// The canonical JSON of a proof's data, as lockgate's worker writes it (docs/proofs.md §3): RFC
// 8785 for strings, integers and objects, keys in code point order; what the worker would write
// otherwise (an unpaired surrogate, NaN, a non-integer below 1e-4 that Python writes as 1e-05) is
// refused, never approximated.
function canon(value) {
  if (typeof value === "string") return JSON.stringify(wellFormed(value));
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(value + " is not JSON a proof can name");
    if (!Number.isInteger(value) && Math.abs(value) < 1e-4) {
      throw new TypeError(value + " is written differently by lockgate's worker (below 1e-4): send it as text");
    }
    return JSON.stringify(value);
  }
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canon).join(",") + "]";
  if (typeof value === "object") {
    const keys = Object.keys(value).map(wellFormed).sort(byCodePoint);
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canon(value[k])).join(",") + "}";
  }
  throw new TypeError(typeof value + " is not JSON data");
}

function b64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// A proof of `authorizes` by `principal` from `channel`, not yet signed: issued now, with a new
// nonce (or the ones given).
function unsignedProof(principal, channel, authorizes, issuedAt, nonce) {
  return {
    lockgate_proof: PROOF_FORMAT, principal, channel, authorizes,
    issued_at: issuedAt === undefined ? Math.floor(Date.now() / 1000) : issuedAt,
    nonce: nonce === undefined ? hex(crypto.getRandomValues(new Uint8Array(16))) : nonce,
  };
}

// An Ed25519 private key from its PKCS8 PEM (the file `lockgate keys new` writes), kept
// non-extractable: it can sign, and never be read back out.
async function importPrivateKey(pem) {
  const der = Uint8Array.from(atob(pem.replace(/-----(BEGIN|END) PRIVATE KEY-----|\s+/g, "")), (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
}

// `unsigned` signed with `key` (a WebCrypto Ed25519 private key): the proof to send.
async function signWithKey(unsigned, key) {
  const bytes = new TextEncoder().encode(canon(unsigned));
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, key, bytes);
  return { ...unsigned, signature: b64url(signature) };
}

if (typeof module === "object" && module.exports) {
  module.exports = { PROOF_FORMAT, b64url, byCodePoint, canon, hex, importPrivateKey, signWithKey, unsignedProof };
}
