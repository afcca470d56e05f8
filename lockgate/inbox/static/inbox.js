// lockgate inbox: the browser makes every proof; the server relays it and the worker verifies it.
// A proof is {lockgate_proof, principal, channel, authorizes, issued_at, nonce} and either an
// Ed25519 `signature` over its canonical JSON (RFC 8785) or a passkey's assertion (`passkey`)
// whose challenge is the SHA-256 of those bytes.
"use strict";

const IDENTITY = "lockgate.identity";

// RFC 8785 for plain JSON data (what a proof holds: strings, safe integers, objects).
function canon(value) {
  if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("non-finite");
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canon).join(",") + "]";
  return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canon(value[k])).join(",") + "}";
}

function b64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromB64url(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function identity() {
  try { return JSON.parse(localStorage.getItem(IDENTITY) || "null"); } catch { return null; }
}

function keyStore(mode) {
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open("lockgate", 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore("keys");
    opening.onsuccess = () => resolve(opening.result.transaction("keys", mode).objectStore("keys"));
    opening.onerror = () => reject(opening.error);
  });
}

async function storedKey(principal) {
  const store = await keyStore("readonly");
  return new Promise((resolve, reject) => {
    const reading = store.get(principal);
    reading.onsuccess = () => resolve(reading.result);
    reading.onerror = () => reject(reading.error);
  });
}

function say(text, kind) {
  const box = document.getElementById("message");
  box.textContent = text;
  box.className = "card " + kind;
  box.hidden = false;
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  return response.json();
}

// Signs `unsigned` as the browser's identity: the proof to send.
async function signProof(unsigned) {
  const me = identity();
  const bytes = new TextEncoder().encode(canon(unsigned));
  if (me.kind === "passkey") {
    const challenge = await crypto.subtle.digest("SHA-256", bytes);
    const credential = await navigator.credentials.get({ publicKey: {
      challenge, rpId: document.body.dataset.rpId, userVerification: "required", timeout: 60000,
      allowCredentials: [{ type: "public-key", id: fromB64url(me.credential_id) }],
    } });
    return { ...unsigned, passkey: credential.toJSON() };
  }
  const key = await storedKey(me.principal);
  if (!key) throw new Error("This browser holds no key for " + me.principal + ": import it again.");
  const signature = await crypto.subtle.sign({ name: "Ed25519" }, key, bytes);
  return { ...unsigned, signature: b64url(signature) };
}

// Answers the gate open on `run` with `choice` (and the evidence typed for it, where the gate
// asks for some); returns what the worker said. With `gate`, the key of the gate the page showed,
// the answer is signed only while that gate is the one open: never for a gate nobody looked at.
async function answerGate(run, choice, gate) {
  const me = identity();
  if (!me) {
    say("A gate is answered by a verified person: say who you are (a passkey or key) first.", "refused");
    return { ok: false };
  }
  const asked = gate ? { choice, gate } : { choice };
  const field = document.querySelector(`textarea.evidence-input[data-run="${CSS.escape(run)}"][data-option="${CSS.escape(choice)}"]`);
  if (field) {
    try { asked.evidence = JSON.parse(field.value || "{}"); } catch {
      say("The evidence must be a JSON object, such as {\"ticket\": \"…\"}.", "refused");
      return { ok: false };
    }
  }
  const bound = await postJSON("/runs/" + run + "/binding", asked);
  if (!bound.ok) { say(bound.error.message, "refused"); return bound; }
  const unsigned = {
    lockgate_proof: 1, principal: me.principal, channel: "web", authorizes: bound.authorizes,
    issued_at: Math.floor(Date.now() / 1000), nonce: hex(crypto.getRandomValues(new Uint8Array(16))),
  };
  const proof = await signProof(unsigned);
  window.lockgateLastProof = proof;
  const answered = await postJSON("/runs/" + run + "/decide", { proof });
  if (answered.ok === false) {
    say(answered.error.message, "refused");
  } else {
    say("Answered " + choice + " as " + me.principal + ": the run is " + answered.status + ".", "done");
    setTimeout(() => location.reload(), 800);
  }
  return answered;
}

async function registerPasskey(principal) {
  const opened = await postJSON("/passkeys/options", { principal });
  if (opened.ok === false) { say(opened.error.message, "refused"); return opened; }
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(opened.options);
  const credential = await navigator.credentials.create({ publicKey });
  const registered = await postJSON("/passkeys/register", { token: opened.token, credential: credential.toJSON() });
  if (registered.ok === false) { say(registered.error.message, "refused"); return registered; }
  localStorage.setItem(IDENTITY, JSON.stringify({ principal, kind: "passkey", credential_id: registered.credential_id }));
  const entry = document.getElementById("directory-entry");
  entry.textContent = registered.entry;
  entry.hidden = false;
  say("Registered. Give your administrator this Directory entry; once it is added you can answer as " + principal + ".", "done");
  showIdentity();
  return registered;
}

async function importKey(principal, pem) {
  const der = Uint8Array.from(atob(pem.replace(/-----(BEGIN|END) PRIVATE KEY-----|\s+/g, "")), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
  const store = await keyStore("readwrite");
  await new Promise((resolve, reject) => {
    const writing = store.put(key, principal);
    writing.onsuccess = resolve;
    writing.onerror = () => reject(writing.error);
  });
  localStorage.setItem(IDENTITY, JSON.stringify({ principal, kind: "key" }));
  say("Imported " + principal + "'s key into this browser (it cannot be read back out).", "done");
  showIdentity();
}

function showIdentity() {
  const me = identity();
  const current = document.getElementById("current");
  if (current && me) current.textContent = "You are " + me.principal + " (" + (me.kind === "passkey" ? "a passkey" : "an Ed25519 key") + " in this browser).";
}

// Pages say what the person looking may do: the server is told who that is with ?as=.
function lookAsMe() {
  const me = identity();
  const url = new URL(location.href);
  if (me && url.searchParams.get("as") !== me.principal) {
    url.searchParams.set("as", me.principal);
    location.replace(url);
    return true;
  }
  if (!me && url.searchParams.has("as")) {
    url.searchParams.delete("as");
    location.replace(url);
    return true;
  }
  return false;
}

// The gates page reloads itself when a gate opens or closes.
function watchGates() {
  const gates = document.getElementById("gates");
  if (!gates) return;
  setInterval(async () => {
    const seen = await (await fetch("/gates.json" + location.search)).json();
    if (seen.fingerprint !== gates.dataset.fingerprint) location.reload();
  }, Number(document.body.dataset.pollMs) || 2000);
}

document.addEventListener("DOMContentLoaded", () => {
  if (lookAsMe()) return;
  showIdentity();
  watchGates();
  for (const button of document.querySelectorAll("button.answer")) {
    button.addEventListener("click", () => answerGate(button.dataset.run, button.dataset.choice, button.dataset.gate));
  }
  const register = document.getElementById("register-passkey");
  if (register) register.addEventListener("click", () => registerPasskey(document.getElementById("passkey-principal").value.trim()));
  const importing = document.getElementById("import-key");
  if (importing) importing.addEventListener("click", () => importKey(document.getElementById("key-principal").value.trim(), document.getElementById("key-pem").value));
  const forget = document.getElementById("forget");
  if (forget) forget.addEventListener("click", () => { localStorage.removeItem(IDENTITY); location.replace("/"); });
});
