import { randomBytes } from 'node:crypto';
import { readPasswordFromStdin } from './common.js';

/** The password of create-admin/reset-password: from stdin with --password-stdin, else generated and shown. */
export async function choosePassword(fromStdin: boolean): Promise<{ password: string; generated: boolean }> {
  if (fromStdin) return { password: await readPasswordFromStdin(), generated: false };
  return { password: randomBytes(12).toString('base64url'), generated: true };
}

export function showGenerated(email: string, password: string): string {
  return `\n  Sign in as ${email} with the password\n\n      ${password}\n\n  It is shown only this once.\n`;
}
