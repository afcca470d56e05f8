// Copies the one source both the inbox's pages and this signer use (canonical JSON, Ed25519
// signing with WebCrypto) into the build, beside the compiled signer that requires it, with its
// types.
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const shared = path.join(root, "..", "..", "lockgate", "inbox", "static", "proofs.js");
fs.copyFileSync(shared, path.join(root, "dist", "src", "proofs.js"));
fs.copyFileSync(path.join(root, "src", "proofs.d.ts"), path.join(root, "dist", "src", "proofs.d.ts"));
