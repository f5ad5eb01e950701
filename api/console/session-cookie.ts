import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Clock } from '../clock.js'
import type { SessionDocument } from './session-repository.js'
import { sessionCookie } from './session-tokens.js'

/** Sets the session cookie to live as long as the session does now (its expiry slides with use). */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, sessionId: string, session: SessionDocument, now: Clock): void {
  reply.removeHeader('set-cookie')
  const seconds = (session.expires_at.getTime() - now().getTime()) / 1000
  void reply.header('set-cookie', sessionCookie(sessionId, seconds, request.protocol === 'https'))
}

/** Clears the session cookie (sign-out, or a cookie whose session has ended). */
export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  // Fastify appends Set-Cookie values: drop a refresh set earlier in this request.
  reply.removeHeader('set-cookie')
  void reply.header('set-cookie', sessionCookie('', 0, request.protocol === 'https'))
}
