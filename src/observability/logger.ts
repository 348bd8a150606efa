/** JSON logs through pino; secrets and document values are redacted wherever they might appear. */
import pino from 'pino';

/** Field paths that must never reach a log line. */
export const REDACTED_PATHS = [
  'numberMask',
  '*.numberMask',
  'number_mask',
  '*.number_mask',
  'payload',
  '*.payload',
  'password',
  '*.password',
  'apiKey',
  '*.apiKey',
];

/** The process logger. */
export function createLogger(level = 'info'): pino.Logger {
  return pino({
    level,
    base: { service: 'expiry-reminder' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

export type Logger = pino.Logger;
