import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.js';

/**
 * Structured JSON logs. Secrets never reach a log line: request logs carry no headers or bodies, and
 * these paths are redacted in case an object with them is ever logged.
 */
export const REDACT_PATHS = [
  'password',
  'token',
  'key',
  'secret',
  'authorization',
  '*.password',
  '*.token',
  '*.key',
  '*.secret',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: { service: 'workroom' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
