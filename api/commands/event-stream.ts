/**
 * GET /api/v1/commands/:commandId/events: a command's life as Server-Sent
 * Events. Each event's `data` is the CommandPollResponse exactly as GET
 * /commands/:id returns it at that moment (the same schema-ordered JSON),
 * and its `id` is the record's projection_revision: the status projector
 * moves it on with every write of status or progress, so it only grows, and
 * a client reconnecting with `Last-Event-ID` gets the current state only if
 * it is newer than what it saw. The stream ends after the terminal event; a
 * reconnect after that (what EventSource does when a stream ends) is 204 No
 * Content, which tells a standard client to stop.
 *
 * Two limits keep a client from holding this server's streams: an account may
 * have `streamsPerAccount` open here at once (stream-slots.ts; one more is
 * 429), and a stream lives at most `lifetimeMs`, then ends with a `retry:`
 * hint, so EventSource reconnects with Last-Event-ID and misses nothing
 * (sse-stream.ts).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { NatsConnection } from 'nats'
import { COMMAND_ENDED_NUDGE, commandChangedSubject } from '../../contracts/command-changes.js'
import { Type } from 'typebox'
import { isTerminalStatus } from '../../contracts/command-types.js'
import type { EventStreamRecorder } from '../metrics/service-metrics.js'
import { NotFoundError } from '../errors/api-errors.js'
import { errorResponses } from '../errors/error-response.js'
import { toPollResponse, type CommandDocument } from './command-document.js'
import { CommandWatch, type ChangeFeed } from './command-watch.js'
import { CommandParams, stringifyPollResponse } from './schemas.js'
import { KEEP_ALIVE_MS, SseStream } from './sse-stream.js'
import { StreamSlots } from './stream-slots.js'

export { RECONNECT_HINT_MS } from './sse-stream.js'

/** EVENT_STREAM_MAX_SECONDS's default, in ms: a stream is ended (and resumed by its client) at least this often. */
export const DEFAULT_STREAM_LIFETIME_MS = 3_600_000

/** The event id of a record: how many times the projector wrote it (0: as accepted). */
export function eventIdOf(doc: CommandDocument): number {
  return doc.projection_revision ?? 0
}

/** `Last-Event-ID` as a revision; -1 (send the current state) when absent or not a revision. */
export function parseLastEventId(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) return -1
  return Number(value.trim())
}

/** One SSE event, as written on the wire. Pure. */
export function formatEvent(id: number, data: string): string {
  return `id: ${id}\ndata: ${data}\n\n`
}

/** The poll response of a record as GET serializes it. */
export function pollJson(doc: CommandDocument): string {
  return stringifyPollResponse(toPollResponse(doc))
}

const EventStreamDescription =
  'Server-Sent Events: one event per status or progress change (at most one per 250 ms), `id` = a revision that only grows, `data` = the CommandPollResponse as GET returns it; ' +
  'ends after the terminal event. Send `Last-Event-ID` to resume: the current state is sent only if newer. A comment line (`: keep-alive`) every 15 s. ' +
  'A stream lives at most EVENT_STREAM_MAX_SECONDS (default 1 h), then ends after a `retry:` line: reconnect with `Last-Event-ID`. ' +
  'An account may hold EVENT_STREAMS_PER_ACCOUNT streams (default 32) on one server at once; one more is 429 RATE_LIMITED with Retry-After.'

/** The status projector's nudges (contracts/command-changes.ts), one core-NATS subscription per watched command. */
function natsChangeFeed(nats: NatsConnection): ChangeFeed {
  return (commandId, fn) => {
    const subscription = nats.subscribe(commandChangedSubject(commandId), { callback: (err, msg) => (err ? undefined : fn(msg.string() === COMMAND_ENDED_NUDGE)) })
    return () => subscription.unsubscribe()
  }
}

/** One event of the stream, as an SSE parser hands it over (OpenAPI has no richer way to describe a stream). */
const SseEventSchema = Type.Object(
  {
    id: Type.String({ description: "the record's revision: only grows; send it back as Last-Event-ID to resume" }),
    event: Type.Optional(Type.String({ description: 'always the default, `message`' })),
    data: Type.String({ contentMediaType: 'application/json', description: 'a CommandPollResponse, exactly as GET /api/v1/commands/{commandId} returns it' }),
  },
  { title: 'CommandEvent' },
)

/** The event stream route, and the loops that feed its streams. */
export const commandEventRoutes: FastifyPluginAsyncTypebox<{
  keepAliveMs?: number
  metrics?: EventStreamRecorder | undefined
  nats?: NatsConnection | undefined
  /** Streams one account may hold open on this process at once (EVENT_STREAMS_PER_ACCOUNT); DEFAULT_STREAMS_PER_ACCOUNT when unset. */
  streamsPerAccount?: number | undefined
  /** How long a stream lives before it is ended with a reconnect hint (EVENT_STREAM_MAX_SECONDS); DEFAULT_STREAM_LIFETIME_MS when unset. */
  lifetimeMs?: number | undefined
}> = async (app, options) => {
  const watch = new CommandWatch({
    read: (commandId) => app.commands.findForProjection(commandId),
    onError: (err, commandId) => app.log.warn({ err, command_id: commandId }, 'command watch read failed; the next poll retries'),
    changes: options.nats ? natsChangeFeed(options.nats) : undefined,
  })
  const open = new Set<SseStream>()
  const slots = new StreamSlots(options.streamsPerAccount)
  const lifetimeMs = options.lifetimeMs ?? DEFAULT_STREAM_LIFETIME_MS
  options.metrics?.watchEventStreams(() => ({ open: open.size, watchedCommands: watch.watchedCommands }))
  // Before the server waits for its connections: an open stream would hold the close forever.
  app.addHook('preClose', async () => {
    for (const stream of open) stream.finish()
    watch.close()
  })

  app.get(
    '/commands/:commandId/events',
    {
      schema: {
        tags: ['commands'],
        description: EventStreamDescription,
        params: CommandParams,
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ description: 'the id of the last event received; resumes after it' })) }),
        response: {
          // Only the 200 is an event stream: the errors stay application/json, like every route's.
          200: { description: EventStreamDescription, content: { 'text/event-stream': { schema: SseEventSchema } } },
          204: { description: 'the command has ended and Last-Event-ID names its terminal event: nothing more will come', type: 'null' },
          // 429 also when the account holds its limit of open streams on this server.
          ...errorResponses(404, 429),
        },
      },
    },
    async (request, reply) => {
      const doc = await app.commands.find(request.account.id, request.params.commandId)
      if (!doc) throw new NotFoundError(`commandId: no command ${request.params.commandId}`)
      const lastId = parseLastEventId(request.headers['last-event-id'])
      if (isTerminalStatus(doc.status) && eventIdOf(doc) <= lastId) return reply.code(204).send(null)
      // Before any byte of the stream, so a refusal is an ordinary 429 through the error handler.
      const release = slots.take(request.account.id)

      reply.hijack()
      const stream = new SseStream(reply.raw, { keepAliveMs: options.keepAliveMs ?? KEEP_ALIVE_MS, lifetimeMs })
      open.add(stream)
      stream.onFinish(() => {
        open.delete(stream)
        release()
      })
      const unseen = new UnseenStates(lastId)
      /** Writes the record's state if this client has not seen it; true when the stream is over. */
      const send = (current: CommandDocument | null): boolean => {
        if (!current) return true
        const event = unseen.eventFor(current)
        if (event) stream.write(event)
        return isTerminalStatus(current.status)
      }
      if (send(doc) || stream.finished) return stream.finish()
      // The first tick reads again, so a change between the read above and here is not missed.
      const unwatch = watch.watch(doc._id, (current) => {
        if (send(current)) stream.finish()
      })
      stream.onFinish(unwatch)
    },
  )
}

/**
 * What a client has seen of a record: the last event id and status sent.
 * A newer revision goes out, and so does a status change written without
 * one (the id then repeats).
 */
class UnseenStates {
  #lastStatus: string | null = null

  constructor(private lastId: number) {}

  /** The event to send for this state of the record; null when the client has seen it. */
  eventFor(doc: CommandDocument): string | null {
    const id = eventIdOf(doc)
    const statusChanged = this.#lastStatus !== null && doc.status !== this.#lastStatus
    this.#lastStatus = doc.status
    if (id <= this.lastId && !statusChanged) return null
    this.lastId = Math.max(this.lastId, id)
    return formatEvent(id, pollJson(doc))
  }
}
