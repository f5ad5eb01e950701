/**
 * One error type per code of the spec's error table. Thrown where the rule
 * lives; error-handler.ts turns them into `{error, message}` responses.
 */
export abstract class ApiError extends Error {
  abstract readonly statusCode: number
  abstract readonly code: string
}

/** 400: missing required fields, invalid aliases, malformed command, bad query or field values. */
export class InvalidRequestError extends ApiError {
  override name = 'InvalidRequestError'
  readonly statusCode = 400
  readonly code = 'INVALID_REQUEST'
}

/** 401: missing, invalid or revoked API key. */
export class UnauthorizedError extends ApiError {
  override name = 'UnauthorizedError'
  readonly statusCode = 401
  readonly code = 'UNAUTHORIZED'
}

/** 403: a feature the account's plan does not include. */
export class ForbiddenError extends ApiError {
  override name = 'ForbiddenError'
  readonly statusCode = 403
  readonly code = 'FORBIDDEN'
}

/** 404: missing, or another account's (the two are indistinguishable on purpose). */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError'
  readonly statusCode = 404
  readonly code = 'NOT_FOUND'
}

/** 409: the storage destination is disabled; the command to cancel has already ended. */
export class ConflictError extends ApiError {
  override name = 'ConflictError'
  readonly statusCode = 409
  readonly code = 'CONFLICT'
}

/** 422: input validation failed as the endpoint's error list assigns it. */
export class ValidationError extends ApiError {
  override name = 'ValidationError'
  readonly statusCode = 422
  readonly code = 'VALIDATION_ERROR'
}

/** 429: the API key's rate limit is spent; `retryAfterSeconds` goes in Retry-After. */
export class RateLimitedError extends ApiError {
  override name = 'RateLimitedError'
  readonly statusCode = 429
  readonly code = 'RATE_LIMITED'
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message)
  }
}

/** 405: the path exists but not with this method (not a spec code; RFC 9110). `allow` goes in Allow. */
export class MethodNotAllowedError extends ApiError {
  override name = 'MethodNotAllowedError'
  readonly statusCode = 405
  readonly code = 'METHOD_NOT_ALLOWED'
  constructor(
    message: string,
    readonly allow: readonly string[],
  ) {
    super(message)
  }
}

/** 501: the yt-dlp backend is unavailable; the client retries shortly. */
export class NotImplementedError extends ApiError {
  override name = 'NotImplementedError'
  readonly statusCode = 501
  readonly code = 'NOT_IMPLEMENTED'
}
