import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** sdks/test-vectors.json (format in sdks/TEST-VECTORS.md), shared with the server's and Python's tests. */
export interface Vector {
  name: string;
  secret: string;
  webhook_id: string;
  webhook_timestamp: number;
  envelope: Record<string, unknown>;
  unsigned_body: string;
  body: string;
  signature: string;
  x_workroom_signature: string;
  webhook_signature: string;
}
export interface Tampered {
  name: string;
  vector: string;
  body?: string;
  headers?: Record<string, string | null>;
  why: string;
}

const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-vectors.json');
export const vectorFile = JSON.parse(readFileSync(file, 'utf8')) as {
  format: number;
  vectors: Vector[];
  tampered: Tampered[];
};

/** The request of a vector: body text and lower-case headers. */
export function vectorRequest(v: Vector): { body: string; headers: Record<string, string> } {
  return {
    body: v.body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': v.webhook_id,
      'webhook-timestamp': String(v.webhook_timestamp),
      'webhook-signature': v.webhook_signature,
      'x-workroom-signature': v.x_workroom_signature,
    },
  };
}

/** A tampered entry's request: its base vector's, with the body and header overrides applied. */
export function tamperedRequest(t: Tampered): {
  vector: Vector;
  body: string;
  headers: Record<string, string>;
} {
  const vector = vectorFile.vectors.find((v) => v.name === t.vector);
  if (!vector) throw new Error(`tampered ${t.name}: no vector ${t.vector}`);
  const req = vectorRequest(vector);
  const headers = { ...req.headers };
  for (const [k, val] of Object.entries(t.headers ?? {})) {
    if (val === null) delete headers[k];
    else headers[k] = val;
  }
  return { vector, body: t.body ?? req.body, headers };
}
