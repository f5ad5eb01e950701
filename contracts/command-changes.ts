/**
 * A nudge that a command's record changed: the status projector publishes an
 * empty core-NATS message (no JetStream: at most once, nothing stored) on
 * `ffkube.changed.<command_id>` after each write, and an API replica with
 * event streams on that command reads the record at once instead of at its
 * next fallback poll. Losing one only delays an event to that poll.
 *
 * The nudge of the write that ended the command carries `ended`
 * (COMMAND_ENDED_NUDGE): a watcher reads at once for it, even within the
 * spacing it keeps between reads, so a client on the stream learns the end
 * when the record has it rather than up to 250 ms later. A command ends once,
 * so this does not undo the spacing's bound on reads.
 */
export const COMMAND_CHANGED_PREFIX = 'ffkube.changed'

/** The body of the nudge of the write that ended the command; other nudges are empty. */
export const COMMAND_ENDED_NUDGE = 'ended'

/** The subject a command's change nudges go to. */
export function commandChangedSubject(commandId: string): string {
  return `${COMMAND_CHANGED_PREFIX}.${commandId}`
}
