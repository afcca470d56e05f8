// Types of lockgate/inbox/static/proofs.js, the one source of canonical JSON and Ed25519 signing
// that the inbox's pages and this signer share (the build copies it beside the compiled signer).

/** The format id every proof carries as `lockgate_proof`. */
export declare const PROOF_FORMAT: 1;
/** Orders text by Unicode code point, as Python sorts it. */
export declare function byCodePoint(left: string, right: string): number;
/** Canonical JSON of proof data (docs/proofs.md §3); throws TypeError on what it cannot write. */
export declare function canon(value: unknown): string;
/** Bytes as base64url without padding. */
export declare function b64url(bytes: ArrayBuffer | Uint8Array): string;
/** Bytes as lowercase hex. */
export declare function hex(bytes: Uint8Array): string;
/** A proof not yet signed: issued now with a fresh nonce, unless both are given. */
export declare function unsignedProof(
  principal: string,
  channel: string,
  authorizes: Record<string, unknown>,
  issuedAt?: number,
  nonce?: string,
): UnsignedProof;
/** An Ed25519 private key from PKCS8 PEM, non-extractable. */
export declare function importPrivateKey(pem: string): Promise<CryptoKey>;
/** `unsigned` signed with `key`: the proof to send. */
export declare function signWithKey(unsigned: UnsignedProof, key: CryptoKey): Promise<Proof>;

export interface UnsignedProof {
  lockgate_proof: 1;
  principal: string;
  channel: string;
  authorizes: Record<string, unknown>;
  issued_at: number;
  nonce: string;
}

export interface Proof extends UnsignedProof {
  signature: string;
}
