import { Type } from 'typebox'

/** The spec's ErrorResponse; 401 bodies also carry `detail`, as the spec's authentication page shows. */
export const ErrorResponse = Type.Object(
  { error: Type.String({ description: 'machine-readable code, e.g. INVALID_REQUEST' }), message: Type.String(), detail: Type.Optional(Type.String()) },
  { title: 'ErrorResponse' },
)

/** Response schemas for error statuses a route answers with, each an ErrorResponse. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorResponse> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorResponse]))
}
