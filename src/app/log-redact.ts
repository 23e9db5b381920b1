/**
 * Fastify's request log carries no headers, but a serializer or a log line that adds them must never
 * write a raw API key: pino censors these paths wherever a request or its headers are logged.
 */
export const LOG_REDACT = {
  paths: ['req.headers["api-key"]', 'req.headers["api_key"]', 'req.headers.authorization', 'headers["api-key"]', 'headers["api_key"]'],
  censor: '[redacted]',
};
