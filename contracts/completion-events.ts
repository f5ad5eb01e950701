/**
 * "This command has finished": published by the status projector once a
 * command's terminal state (SUCCESS or FAILED) is in MongoDB, consumed by the
 * webhook deliverer. The projector acknowledges the runner's terminal status
 * event only after this publish succeeded, and the Nats-Msg-Id makes a
 * re-publish after a crash a no-op, so every finished command is announced
 * exactly once without a separate outbox.
 */
export const COMPLETION_STREAM = 'FFKUBE_COMPLETIONS'
export const COMPLETION_SUBJECT_PREFIX = 'ffkube.completed'

export function completionSubject(commandId: string): string {
  return `${COMPLETION_SUBJECT_PREFIX}.${commandId}`
}

/** The Nats-Msg-Id of a command's one completion event. */
export function completionEventId(commandId: string): string {
  return `${commandId}:completed`
}

export interface CompletionEvent {
  command_id: string
  account_id: string
  status: 'SUCCESS' | 'FAILED'
  /** ISO 8601: when the terminal state was written. */
  completed_at: string
  /**
   * The command as `GET /api/v1/commands/:id` showed it at completion (the
   * webhook's `data`), and its per-command webhook URL, so the deliverer's
   * first attempt needs no database read. Opaque here: its schema is the API's.
   * Absent in events from older projectors; the deliverer then reads MongoDB.
   */
  snapshot?: { poll: Record<string, unknown>; webhook_url: string | null } | undefined
}
