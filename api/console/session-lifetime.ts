/** How long a console session lasts: 30 minutes after its last use, and never more than 8 hours after sign-in. */
export const SESSION_IDLE_MS = 30 * 60_000
export const SESSION_ABSOLUTE_MS = 8 * 60 * 60_000
/** A session's expiry moves on at most this often, so a busy page does not write on every request. */
export const SESSION_SLIDE_EVERY_MS = 60_000
/** A sign-in link works once, within this long. */
export const SIGN_IN_LINK_TTL_MS = 10 * 60_000

/** When a session used at `usedAt` expires: idle timeout from then, capped by the absolute one. Pure. */
export function sessionExpiry(createdAt: Date, usedAt: Date): Date {
  return new Date(Math.min(usedAt.getTime() + SESSION_IDLE_MS, createdAt.getTime() + SESSION_ABSOLUTE_MS))
}

/** Whether a use at `now` should move the stored expiry on (it last moved at `lastSeenAt`). Pure. */
export function shouldSlide(lastSeenAt: Date, now: Date): boolean {
  return now.getTime() - lastSeenAt.getTime() >= SESSION_SLIDE_EVERY_MS
}
