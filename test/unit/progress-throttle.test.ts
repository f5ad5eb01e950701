import t from 'tap'
import { pino } from 'pino'
import type { StatusEventBody } from '../../contracts/status-events.js'
import { ProgressThrottle, type ThrottleClock } from '../../runner-image/runner/report/progress-throttle.js'

/** A clock the test moves by hand; timers fire when it passes them. */
class ManualClock implements ThrottleClock {
  time = 0
  timers: Array<{ at: number; fn: () => void } | null> = []
  now(): number {
    return this.time
  }
  after(ms: number, fn: () => void): () => void {
    const index = this.timers.push({ at: this.time + ms, fn }) - 1
    return () => void (this.timers[index] = null)
  }
  advance(ms: number): void {
    this.time += ms
    for (const [index, timer] of this.timers.entries()) {
      if (timer && timer.at <= this.time) {
        this.timers[index] = null
        timer.fn()
      }
    }
  }
}

function throttled(intervalMs = 250) {
  const sent: StatusEventBody[] = []
  const clock = new ManualClock()
  const throttle = new ProgressThrottle({ report: async (body) => void sent.push(body), close: async () => {} }, pino({ level: 'silent' }), intervalMs, clock)
  return { sent, clock, throttle }
}

const stagesOf = (sent: StatusEventBody[]) => sent.map((e) => (e.type === 'PROCESSING' ? `${e.stage}:${e.progress}` : e.type))

t.test('merges the stages of the first interval into one event, sent when it ends', async (t) => {
  const { sent, clock, throttle } = throttled()
  throttle.stage('FETCHING')
  clock.advance(30)
  throttle.stage('RUNNING')
  throttle.percent(40)
  throttle.percent(99)
  throttle.stage('PROBING')
  throttle.stage('UPLOADING')
  clock.advance(219)
  await Promise.resolve()
  t.same(stagesOf(sent), [], 'nothing before the interval ends')
  clock.advance(1)
  await throttle.flush('send')
  t.same(stagesOf(sent), ['UPLOADING:99'], 'one event: the last stage, with the progress a stage event would have kept')
})

t.test('a command shorter than the interval reports nothing but its end', async (t) => {
  const { sent, clock, throttle } = throttled()
  throttle.stage('FETCHING')
  clock.advance(100)
  throttle.stage('RUNNING')
  throttle.percent(99)
  await throttle.flush('drop')
  clock.advance(1000)
  t.same(stagesOf(sent), [], 'the SUCCESS that follows says it all')
})

t.test('drops what waits when a SUCCESS follows, and sends it before anything else', async (t) => {
  const dropped = throttled()
  dropped.clock.advance(300)
  dropped.throttle.stage('FETCHING')
  dropped.throttle.stage('RUNNING')
  dropped.throttle.percent(50)
  await dropped.throttle.flush('drop')
  dropped.clock.advance(1000)
  t.same(stagesOf(dropped.sent), ['FETCHING:null'], 'the waiting RUNNING:50 never goes out, not even when its timer would have fired')

  const kept = throttled()
  kept.clock.advance(300)
  kept.throttle.stage('FETCHING')
  kept.throttle.stage('RUNNING')
  kept.throttle.percent(50)
  await kept.throttle.flush('send')
  t.same(stagesOf(kept.sent), ['FETCHING:null', 'RUNNING:50'], 'a failure or a phase end keeps how far the command got')
})

t.test('spaces events by the interval while a long command runs', async (t) => {
  const { sent, clock, throttle } = throttled()
  throttle.stage('RUNNING')
  for (let percent = 0; percent <= 95; percent += 5) {
    clock.advance(100)
    throttle.percent(percent)
  }
  await throttle.flush('send')
  const percents = sent.flatMap((e) => (e.type === 'PROCESSING' && e.progress !== null ? [e.progress] : []))
  t.ok(sent.length <= 2 + Math.ceil(2000 / 250), `${sent.length} events in 2 s`)
  t.same(percents, [...percents].sort((a, b) => a - b), 'progress only grows')
  t.equal(percents.at(-1), 95, 'the last percent is not lost')
})

t.test('sends every event at once with an interval of 0', async (t) => {
  const { sent, throttle } = throttled(0)
  throttle.stage('FETCHING')
  throttle.stage('RUNNING')
  throttle.percent(10)
  throttle.stage('PROBING')
  await throttle.flush('drop')
  t.same(stagesOf(sent), ['FETCHING:null', 'RUNNING:null', 'RUNNING:10', 'PROBING:null'], 'each event as it came')
})
