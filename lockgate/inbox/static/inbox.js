// lockgate inbox: the browser makes every proof; the server relays it and the worker verifies it.
// A proof is {lockgate_proof, principal, channel, authorizes, issued_at, nonce} and either an
// Ed25519 `signature` over its canonical JSON or a passkey's assertion (`passkey`) whose
// challenge is the SHA-256 of those bytes (docs/proofs.md). proofs.js, loaded first, makes them:
// canon, b64url, unsignedProof, importPrivateKey, signWithKey.
"use strict";

const IDENTITY = "lockgate.identity";
const SAID = "lockgate.said";

function fromB64url(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
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

function freshProof(principal, authorizes) {
  return unsignedProof(principal, "web", authorizes);
}

// Signs `unsigned` as `me` (the browser's identity), with `key` where given (a key being
// imported) or else the key this browser keeps for it: the proof to send.
async function signProof(unsigned, me = identity(), key = null) {
  if (me.kind === "passkey") {
    const challenge = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canon(unsigned)));
    const credential = await navigator.credentials.get({ publicKey: {
      challenge, rpId: document.body.dataset.rpId, userVerification: "required", timeout: 60000,
      allowCredentials: [{ type: "public-key", id: fromB64url(me.credential_id) }],
    } });
    return { ...unsigned, passkey: credential.toJSON() };
  }
  const signing = key || await storedKey(me.principal);
  if (!signing) throw new Error("This browser holds no key for " + me.principal + ": import it again.");
  return signWithKey(unsigned, signing);
}

// Signs in as `me`: signs the inbox's one-time challenge; the inbox checks it against the
// Directory and keeps a session. Returns what the inbox said.
async function signIn(me = identity(), key = null) {
  if (!me) {
    say("This browser holds no identity: import your key or register a passkey first.", "refused");
    return { ok: false };
  }
  const opened = await postJSON("/session/challenge", {});
  if (opened.ok === false) { say(opened.error.message, "refused"); return opened; }
  const unsigned = freshProof(me.principal, { kind: "sign_in", inbox: location.origin, challenge: opened.challenge });
  const signedIn = await postJSON("/session", { proof: await signProof(unsigned, me, key) });
  if (signedIn.ok === false) say(signedIn.error.message, "refused");
  return signedIn;
}

async function signOut() {
  await postJSON("/session/end", {});
}

// What an answer to the gate a page shows may authorize: exactly its run, execution, gate and
// the choice clicked (with the evidence typed for it), nothing else. The inbox is never trusted
// for this: it could be confused, or compromised.
function expectedBinding(shown, choice, evidence, comment) {
  const expected = {
    kind: "decide", graph: shown.graph, run: shown.run, execution: shown.execution,
    gate: shown.gate, choice,
  };
  // The inbox asks for no evidence where none was typed ({}), as the worker counts it.
  if (evidence !== undefined && Object.keys(evidence).length) expected.evidence = evidence;
  if (comment) expected.comment = comment;
  return expected;
}

function namesWhatWasShown(authorizes, expected) {
  if (!authorizes || typeof authorizes !== "object") return false;
  const { subject, ...rest } = authorizes;
  return typeof subject === "string" && canon(rest) === canon(expected);
}

// The gate of `run` this page shows: {graph, run, execution, gate}, or null.
function gateShown(run) {
  const section = Array.from(document.querySelectorAll("section.gate")).find((each) => each.dataset.run === run);
  if (!section) return null;
  const { graph, execution, gate } = section.dataset;
  return { graph, run, execution, gate };
}

// Answers the gate of `run` this page shows with `choice` (and the evidence typed for it, where
// the gate asks for some); returns what the worker said. The answer is signed only while that
// gate is the one open (never one nobody looked at), and only if what the inbox hands back to
// sign names exactly that run, execution, gate and choice.
async function answerGate(run, choice) {
  const me = identity();
  const viewer = document.body.dataset.viewer;
  if (!me || !viewer) {
    say("A gate is answered by a verified person: sign in with your passkey or key first.", "refused");
    return { ok: false };
  }
  if (me.principal !== viewer) {
    say("You are signed in as " + viewer + " but this browser holds " + me.principal + "'s identity: sign in again.", "refused");
    return { ok: false };
  }
  const shown = gateShown(run);
  if (!shown) {
    say("This page shows no gate of " + run + ": nothing was signed.", "refused");
    return { ok: false, error: { code: "NOT_SIGNED", message: "no gate of this run shown" } };
  }
  const asked = { choice, gate: shown.gate };
  const field = Array.from(document.querySelectorAll("textarea.evidence-input")).find((each) => each.dataset.run === run && each.dataset.option === choice);
  if (field) {
    try { asked.evidence = JSON.parse(field.value || "{}"); } catch {
      say("The evidence must be a JSON object, such as {\"ticket\": \"…\"}.", "refused");
      return { ok: false };
    }
  }
  const said = Array.from(document.querySelectorAll("textarea.comment-input")).find((each) => each.dataset.run === run);
  const comment = said ? said.value.trim() : "";
  if (comment) asked.comment = comment;
  const place = "/runs/" + encodeURIComponent(run);
  return signAndSend(me, place, asked, expectedBinding(shown, choice, asked.evidence, comment),
    namesWhatWasShown, place + "/decide",
    (answered) => "Your answer “" + labelOf(choice) + "” was recorded, signed as " + me.principal + ": the run is " + answered.status + ".");
}

// Asks the inbox what `asked` authorizes at `place`, signs it only if it names exactly
// `expected` (as `matches` judges), sends the proof to `sendTo`, and says what was done in the
// words `recorded` gives the result (again once the page has reloaded).
async function signAndSend(me, place, asked, expected, matches, sendTo, recorded) {
  const bound = await postJSON(place + "/binding", asked);
  if (!bound.ok) { say(bound.error.message, "refused"); return bound; }
  if (!matches(bound.authorizes, expected)) {
    const message = "The inbox asked this browser to sign something other than what this page shows ("
      + canon(bound.authorizes) + " instead of " + canon(expected) + "): nothing was signed.";
    say(message, "refused");
    return { ok: false, error: { code: "NOT_SIGNED", message } };
  }
  let proof;
  try {
    proof = await signProof(freshProof(me.principal, bound.authorizes), me);
  } catch (error) {
    say("Nothing was signed: " + error.message, "refused");
    return { ok: false, error: { code: "NOT_SIGNED", message: error.message } };
  }
  window.lockgateLastProof = proof;
  const done = await postJSON(sendTo, { proof });
  if (done.ok === false) {
    say(done.error.message, "refused");
  } else {
    const text = recorded(done);
    say(text, "done");
    sessionStorage.setItem(SAID, text);  // said again once the page has reloaded
    setTimeout(() => location.reload(), 800);
  }
  return done;
}

function labelOf(option) {
  const words = option.replace(/[_-]/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

// What the work a button acts on is called, as its card or page shows it.
function subjectOf(button) {
  const card = button.closest("section");
  const heading = (card && card.querySelector("h2.work")) || document.querySelector("h1.subject");
  return heading ? heading.textContent.trim() : button.dataset.run;
}

// Asks first (what the act does, and that the person's key or passkey signs it), then acts.
function confirmThen(question, act, destructive) {
  const dialog = document.getElementById("confirm");
  const me = identity();
  document.getElementById("confirm-text").textContent = question + " Your "
    + (me && me.kind === "passkey" ? "passkey" : "key") + " signs exactly this, as " + document.body.dataset.viewer + ".";
  document.getElementById("confirm-send").className = destructive ? "destructive" : "primary";
  dialog.returnValue = "";
  dialog.onclose = () => { if (dialog.returnValue === "send") act(); };
  dialog.showModal();
}

function confirmAnswer(button) {
  const leadsTo = button.dataset.endsRun ? "It ends the run."
    : button.dataset.leadsTo ? "Next: " + button.dataset.leadsTo + "." : "";
  confirmThen("Answer “" + button.dataset.label + "” on “" + subjectOf(button) + "”? " + leadsTo,
    () => answerGate(button.dataset.run, button.dataset.choice), button.classList.contains("destructive"));
}

// What a resume or a cancel of the run a button shows may authorize, exactly.
function expectedAct(act, shown) {
  if (act === "resume") return { kind: "resume", graph: shown.graph, run: shown.run, execution: shown.execution, node: shown.node };
  return { kind: "cancel", graph: shown.graph, run: shown.run, execution: shown.execution, reason: null };
}

// Resumes (`act` "resume") or cancels (`act` "cancel") `run`, as the page's button for it shows
// it: signed only if what the inbox hands back names exactly that run, execution (and, a
// resume, the node it is parked at); the run's worker judges it as it judges the CLI's.
async function actOnRun(act, run) {
  const me = identity();
  const viewer = document.body.dataset.viewer;
  if (!me || !viewer || me.principal !== viewer) {
    say("Sign in with your passkey or key first: a run is resumed or cancelled by a verified person.", "refused");
    return { ok: false };
  }
  const button = Array.from(document.querySelectorAll("button." + act)).find((each) => each.dataset.run === run);
  if (!button) {
    say("This page shows no such button for " + run + ": nothing was signed.", "refused");
    return { ok: false, error: { code: "NOT_SIGNED", message: "nothing shown" } };
  }
  const shown = { run, graph: button.dataset.graph, execution: button.dataset.execution, node: button.dataset.node };
  const place = "/runs/" + encodeURIComponent(run) + "/" + act;
  return signAndSend(me, place, {}, expectedAct(act, shown),
    (authorizes, expected) => Boolean(authorizes) && canon(authorizes) === canon(expected), place,
    (done) => (act === "resume" ? "Resumed" : "Cancelled") + ", signed as " + me.principal + ": the run is " + done.status + ".");
}

async function registerPasskey(principal, code) {
  const opened = await postJSON("/passkeys/options", { principal, code });
  if (opened.ok === false) { say(opened.error.message, "refused"); return opened; }
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(opened.options);
  const credential = await navigator.credentials.create({ publicKey });
  const registered = await postJSON("/passkeys/register", { token: opened.token, credential: credential.toJSON() });
  if (registered.ok === false) { say(registered.error.message, "refused"); return registered; }
  localStorage.setItem(IDENTITY, JSON.stringify({ principal, kind: "passkey", credential_id: registered.credential_id }));
  const entry = document.getElementById("directory-entry");
  entry.textContent = registered.entry;
  entry.hidden = false;
  say("Registered. Give your administrator this Directory entry; once it is added you can sign in and answer as " + principal + ".", "done");
  document.getElementById("back-to-gates").hidden = false;
  showIdentity();
  return registered;
}

// Imports `principal`'s key: kept only if the Directory lists it for `principal` (the import
// signs in with it); otherwise nothing is kept and the page says why.
async function importKey(principal, pem) {
  let key;
  try {
    key = await importPrivateKey(pem);
  } catch {
    say("This is not an Ed25519 private key in PKCS8 PEM (the file `lockgate keys new` wrote): nothing was imported.", "refused");
    return { ok: false };
  }
  const me = { principal, kind: "key" };
  const signedIn = await signIn(me, key);
  if (signedIn.ok === false) {
    say("Not imported: " + signedIn.error.message, "refused");
    return signedIn;
  }
  const store = await keyStore("readwrite");
  // Kept once the transaction commits, not when the write is queued: the page reloads next,
  // and a reload before the commit would lose the key.
  await new Promise((resolve, reject) => {
    store.put(key, principal);
    store.transaction.oncomplete = resolve;
    store.transaction.onerror = () => reject(store.transaction.error);
    store.transaction.onabort = () => reject(store.transaction.error);
  });
  localStorage.setItem(IDENTITY, JSON.stringify(me));
  // Said again once the page has reloaded as the person now signed in.
  sessionStorage.setItem(SAID, "Imported " + principal + "'s key into this browser (it cannot be read back out); you are signed in as " + principal + ".");
  location.replace("/");  // back to the gates
  return signedIn;
}

function showIdentity() {
  const me = identity();
  const current = document.getElementById("current");
  if (current && me) current.textContent = "This browser holds " + me.principal + "'s " + (me.kind === "passkey" ? "passkey" : "Ed25519 key") + ".";
  const button = document.getElementById("sign-in");
  if (button && me) { button.textContent = "sign in as " + me.principal; button.hidden = false; }
  const note = document.getElementById("signing-in");
  if (note && me) note.textContent = "Signing in as " + me.principal + "…";
}

// A browser that holds a key signs in by itself once its session has ended; a passkey asks the
// person (the "sign in" button).
async function signInOnArrival() {
  const me = identity();
  if (!me || document.body.dataset.viewer || me.kind !== "key") return;
  if (sessionStorage.getItem("lockgate.signing-in")) return;
  sessionStorage.setItem("lockgate.signing-in", "1");
  const signedIn = await signIn(me);
  if (signedIn.ok !== false) location.reload();
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
  if (document.body.dataset.viewer) sessionStorage.removeItem("lockgate.signing-in");
  const said = sessionStorage.getItem(SAID);
  if (said) { sessionStorage.removeItem(SAID); say(said, "done"); }
  showIdentity();
  signInOnArrival();
  watchGates();
  for (const button of document.querySelectorAll("button.answer")) {
    button.addEventListener("click", () => confirmAnswer(button));
  }
  for (const button of document.querySelectorAll("button.resume")) {
    button.addEventListener("click", () => confirmThen("Resume “" + subjectOf(button) + "”? It carries on as you.", () => actOnRun("resume", button.dataset.run), false));
  }
  for (const button of document.querySelectorAll("button.cancel")) {
    button.addEventListener("click", () => confirmThen("Cancel “" + subjectOf(button) + "” for good?", () => actOnRun("cancel", button.dataset.run), true));
  }
  const signInButton = document.getElementById("sign-in");
  if (signInButton) signInButton.addEventListener("click", async () => { if ((await signIn()).ok !== false) location.reload(); });
  const signOutButton = document.getElementById("sign-out");
  if (signOutButton) signOutButton.addEventListener("click", async () => { await signOut(); location.replace("/"); });
  const register = document.getElementById("register-passkey");
  if (register) register.addEventListener("click", () => registerPasskey(document.getElementById("passkey-principal").value.trim(), document.getElementById("passkey-code").value.trim()));
  const keyFile = document.getElementById("key-file");
  if (keyFile) keyFile.addEventListener("change", async () => { if (keyFile.files[0]) document.getElementById("key-pem").value = await keyFile.files[0].text(); });
  const importing = document.getElementById("import-key");
  if (importing) importing.addEventListener("click", () => importKey(document.getElementById("key-principal").value.trim(), document.getElementById("key-pem").value));
  const forget = document.getElementById("forget");
  if (forget) forget.addEventListener("click", async () => { localStorage.removeItem(IDENTITY); await signOut(); location.replace("/"); });
});
