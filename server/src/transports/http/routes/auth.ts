import { z } from 'zod';
import {
  login,
  LOGIN_MAX_BODY_BYTES,
  LoginInput,
  LoginOutput,
  logout,
  logoutEverywhere,
  me,
} from '../../../operations/auth/session.js';
import { verifyDeviceToken } from '../../../operations/auth/device-token.js';
import { parseInput } from '../../../operations/operation.js';
import { deviceCookie, presentedDeviceTokens } from '../device-cookie.js';
import { clientAddress, readJsonObject, sendJson } from '../../kit/io.js';
import type { Route } from '../types.js';

const loginError = { $ref: '#/components/responses/Error' };

/** Sessions: sign in (throttled, with device tokens), sign out, who am I. */
export const authRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/auth/login',
    auth: 'none',
    tags: ['auth'],
    doc: {
      summary: 'Sign in with email and password; answers a bearer token',
      description:
        'Failed attempts are throttled (docs/API.md, Sign-in throttling). A client that sends back the ' +
        '`device_token` of an earlier sign-in to the same account (header `X-Workroom-Device`, or the ' +
        '`workroom_device` cookie browsers keep) is throttled on its own, so failed attempts from ' +
        `elsewhere cannot lock it out. The body is at most ${LOGIN_MAX_BODY_BYTES} bytes.`,
      parameters: [
        {
          name: 'X-Workroom-Device',
          in: 'header',
          required: false,
          description: 'The `device_token` of an earlier sign-in to this account',
          schema: { type: 'string' },
        },
      ],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: z.toJSONSchema(LoginInput, { io: 'input' }) } },
      },
      responses: {
        200: {
          description: 'Signed in',
          headers: {
            'Set-Cookie': {
              description: 'The device token as an HttpOnly, SameSite=Strict cookie for /api/auth',
              schema: { type: 'string' },
            },
          },
          content: { 'application/json': { schema: z.toJSONSchema(LoginOutput) } },
        },
        400: loginError,
        401: loginError,
        413: loginError,
        415: loginError,
        429: loginError,
        503: loginError,
      },
    },
    async handle(rc) {
      const { http, publicUrl } = rc.services.config;
      const devices = presentedDeviceTokens(rc.req);
      // A client with a valid device token (checked without the database) has signed in before: its
      // body (at most 8 KiB) does not count against the strangers' budget, so connections stalling
      // bodies cannot keep it out either. It is bounded like an authenticated caller's body.
      const known = devices.some(
        (t) => verifyDeviceToken(rc.services.encryptionKey, t, rc.services.clock.now()) !== null,
      );
      const input = parseInput(
        LoginInput,
        await readJsonObject(
          rc.req,
          LOGIN_MAX_BODY_BYTES,
          http.bodyTimeoutMs,
          known ? undefined : rc.unauthenticatedBody,
        ),
      );
      const address = clientAddress(rc.req, http.trustProxy);
      const result = await login(rc.services, input, address, devices);
      sendJson(rc.res, 200, result, {
        'set-cookie': deviceCookie(result.device_token, rc.req, publicUrl, http.trustProxy),
      });
    },
  },
  { method: 'POST', path: '/api/auth/logout', op: logout, tags: ['auth'] },
  { method: 'POST', path: '/api/auth/logout-all', op: logoutEverywhere, tags: ['auth'] },
  { method: 'GET', path: '/api/auth/me', op: me, tags: ['auth'] },
];
