import type { IncomingMessage } from 'node:http';
import { DEVICE_TOKEN_TTL_SECONDS } from '../../operations/auth/device-token.js';

/**
 * The sign-in device token on the wire (operations/auth/device-token.ts): browsers keep it in an
 * HttpOnly, SameSite=Strict cookie sent only to /api/auth; other clients send it back in the
 * `X-Workroom-Device` header (the login answer carries it as `device_token`).
 *
 * The one cookie is read by hand rather than with the `cookie` package: that package is only in the
 * tree as a development dependency of express (through the MCP SDK), not a dependency of the server,
 * and all we need is the value of one cookie whose values we write ourselves (base64url and dots).
 */
export const DEVICE_COOKIE = 'workroom_device';
export const DEVICE_HEADER = 'x-workroom-device';
const COOKIE_PATH = '/api/auth';
/** Cookie headers longer than this are not searched (Node bounds all headers at 16 KB anyway). */
const MAX_COOKIE_HEADER = 8192;
const VALUE = /^[0-9A-Za-z._-]{1,200}$/;

/**
 * The device tokens the client presents: the header's, then each `workroom_device` cookie (a browser
 * may send several of one name, set for different paths). The caller uses the first valid one.
 */
export function presentedDeviceTokens(req: IncomingMessage): string[] {
  const found: string[] = [];
  const header = req.headers[DEVICE_HEADER];
  if (typeof header === 'string' && VALUE.test(header.trim())) found.push(header.trim());
  const cookie = req.headers.cookie;
  if (typeof cookie === 'string' && cookie.length <= MAX_COOKIE_HEADER) {
    for (const pair of cookie.split(';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim() !== DEVICE_COOKIE) continue;
      let value = pair.slice(eq + 1).trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      if (VALUE.test(value)) found.push(value);
    }
  }
  return found.slice(0, 4);
}

/**
 * Whether the client reached us over https: the public URL says so, the socket is TLS, or a trusted
 * reverse proxy says so (X-Forwarded-Proto).
 */
function overHttps(req: IncomingMessage, publicUrl: string, trustProxy: boolean): boolean {
  if (publicUrl.startsWith('https:')) return true;
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return true;
  const proto = req.headers['x-forwarded-proto'];
  return trustProxy && typeof proto === 'string' && proto.split(',').pop()?.trim().toLowerCase() === 'https';
}

/** The Set-Cookie value that keeps `token` in the browser for the token's lifetime. */
export function deviceCookie(
  token: string,
  req: IncomingMessage,
  publicUrl: string,
  trustProxy: boolean,
): string {
  const secure = overHttps(req, publicUrl, trustProxy) ? '; Secure' : '';
  return `${DEVICE_COOKIE}=${token}; Path=${COOKIE_PATH}; Max-Age=${DEVICE_TOKEN_TTL_SECONDS}; HttpOnly; SameSite=Strict${secure}`;
}
