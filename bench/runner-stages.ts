/**
 * When each step of a command's run reached NATS, as the bench sees it: the
 * runner's status events (FETCHING, RUNNING, PROBING, UPLOADING, … then
 * SUCCESS or FAILED) on `ffkube.status.<command_id>`, timed on arrival with
 * performance.now(), the clock the client's view uses. Splits a command's
 * time into the runner's part (submit → SUCCESS event), the projection
 * (SUCCESS → CompletionEvent) and the client's read (→ seen). The runner
 * sends at most one PROCESSING event per 250 ms (report/progress-throttle.ts),
 * so a short command shows its SUCCESS alone, and a step's first event marks
 * when it was reported, not when it began. The finer split comes with the
 * SUCCESS event: the runner's own phase timings (`runner_phase_seconds`:
 * fetch, run, deliver), and what the runner's part spent outside them
 * (dispatch, the run's start, the event's way to NATS).
 */
import { JSONCodec, type NatsConnection } from 'nats'
import { STATUS_SUBJECT_PREFIX, type RunnerPhaseSeconds, type StatusEvent } from '../contracts/status-events.js'

/** A step and when its first event arrived. */
export interface StepSeen {
  step: string
  at: number
  /** On SUCCESS: the runner's own timings of its phases. */
  phases?: RunnerPhaseSeconds
}

export class RunnerStages {
  readonly #seen = new Map<string, StepSeen[]>()

  constructor(nc: NatsConnection) {
    const codec = JSONCodec<StatusEvent>()
    nc.subscribe(`${STATUS_SUBJECT_PREFIX}.>`, {
      callback: (_err, msg) => {
        const at = performance.now()
        const event = codec.decode(msg.data)
        const step = event.type === 'PROCESSING' ? event.stage : event.type
        const steps = this.#seen.get(event.command_id) ?? []
        // Progress repeats a step; its first event is when the step began.
        if (!steps.some((seen) => seen.step === step)) steps.push({ step, at, ...(event.type === 'SUCCESS' && event.runner_phase_seconds ? { phases: event.runner_phase_seconds } : {}) })
        this.#seen.set(event.command_id, steps)
      },
    })
  }

  /** The command's steps in the order they arrived; forgets them. */
  take(commandId: string): StepSeen[] {
    const steps = this.#seen.get(commandId) ?? []
    this.#seen.delete(commandId)
    return steps
  }
}

/**
 * Named spans from the submit to the client seeing the end: "submit → FETCHING",
 * "FETCHING → RUNNING", …, "SUCCESS → completion event", "completion event → client".
 */
export function spansOf(startedAt: number, steps: StepSeen[], completionAt: number, seenAt: number): Array<[string, number]> {
  const marks: StepSeen[] = [{ step: 'submit', at: startedAt }, ...steps, { step: 'completion event', at: completionAt }, { step: 'client', at: seenAt }]
  const spans = marks.slice(1).map((mark, i): [string, number] => [`${marks[i]!.step} → ${mark.step}`, mark.at - marks[i]!.at])
  const success = steps.find((seen) => seen.step === 'SUCCESS')
  if (!success?.phases) return spans
  const { fetch, run, deliver } = success.phases
  return [
    ...spans,
    ['runner: fetch', fetch * 1000],
    ['runner: run (ffmpeg)', run * 1000],
    ['runner: deliver (probe, upload)', deliver * 1000],
    ['submit → SUCCESS outside the runner\'s phases', success.at - startedAt - (fetch + run + deliver) * 1000],
  ]
}
