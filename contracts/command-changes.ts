/**
 * A nudge that a command's record changed: the status projector publishes an
 * empty core-NATS message (no JetStream: at most once, nothing stored) on
 * `ffkube.changed.<command_id>` after each write, and an API replica with
 * event streams on that command reads the record at once instead of at its
 * next fallback poll. Losing one only delays an event to that poll.
 */
export const COMMAND_CHANGED_PREFIX = 'ffkube.changed'

/** The subject a command's change nudges go to. */
export function commandChangedSubject(commandId: string): string {
  return `${COMMAND_CHANGED_PREFIX}.${commandId}`
}
