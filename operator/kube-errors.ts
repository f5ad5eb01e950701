/**
 * HTTP status of a failed Kubernetes call, whichever client path threw it:
 * typed APIs throw ApiException (`code`), watches an Error with `statusCode`.
 */
export function httpStatus(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | null
  if (typeof e?.code === 'number') return e.code
  if (typeof e?.statusCode === 'number') return e.statusCode
  return undefined
}

export const isNotFound = (err: unknown): boolean => httpStatus(err) === 404
/** 409: AlreadyExists on create, Conflict (stale resourceVersion) on update. */
export const isConflict = (err: unknown): boolean => httpStatus(err) === 409

/** A short, log-safe description (ApiException messages embed whole response bodies and headers). */
export function describeError(err: unknown): string {
  const status = httpStatus(err)
  const body = (err as { body?: unknown } | null)?.body
  let message: string | undefined
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: string }).message
    } catch {
      message = body.slice(0, 200)
    }
  } else if (body && typeof body === 'object') {
    message = (body as { message?: string }).message
  }
  if (status !== undefined) return `HTTP ${status}${message ? `: ${message}` : ''}`
  return err instanceof Error ? err.message : String(err)
}
