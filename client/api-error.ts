import type { ErrorResponse } from './index.js'

/** An answer other than 2xx, with the API's `{ error, message }` when it sent one. */
export class ApiError extends Error {
  override readonly name = 'ApiError'

  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The spec's machine-readable code (`UNAUTHORIZED`, `VALIDATION_ERROR`, …), or `HTTP_<status>` when the body had none. */
    readonly code: string,
    message: string,
    /** Retry-After in seconds, on a 429. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message)
  }

  /** From a response and its parsed body (anything: a proxy may answer HTML). */
  static from(response: Response, body: unknown): ApiError {
    const error = isErrorResponse(body) ? body : null
    const retryAfter = Number(response.headers.get('retry-after'))
    return new ApiError(
      response.status,
      error?.error ?? `HTTP_${response.status}`,
      error?.message ?? `${response.status} ${response.statusText}`.trim(),
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
    )
  }
}

function isErrorResponse(body: unknown): body is ErrorResponse {
  return typeof body === 'object' && body !== null && typeof (body as ErrorResponse).error === 'string' && typeof (body as ErrorResponse).message === 'string'
}

/** The `data` of an openapi-fetch result, or an ApiError thrown for its error. */
export function expectData<Data>(result: { data?: Data; error?: unknown; response: Response }): Data {
  if (result.response.ok && result.data !== undefined) return result.data
  throw ApiError.from(result.response, result.error)
}
