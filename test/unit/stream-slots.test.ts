import t from 'tap'
import { RateLimitedError } from '../../api/errors/api-errors.js'
import { STREAM_SLOT_RETRY_AFTER_SECONDS, StreamSlots } from '../../api/commands/stream-slots.js'

t.test('an account takes slots up to its cap, and the next is RATE_LIMITED naming the limit and the count', async (t) => {
  const slots = new StreamSlots(2)
  slots.take('acc_a')
  slots.take('acc_a')
  t.equal(slots.heldBy('acc_a'), 2)
  t.throws(() => slots.take('acc_a'), RateLimitedError)
  t.throws(() => slots.take('acc_a'), { code: 'RATE_LIMITED', statusCode: 429, retryAfterSeconds: STREAM_SLOT_RETRY_AFTER_SECONDS, message: /has 2 open on this server and the limit is 2/ })
  t.equal(slots.heldBy('acc_a'), 2, 'a refusal takes nothing')
})

t.test("one account's slots do not count against another's", async (t) => {
  const slots = new StreamSlots(1)
  slots.take('acc_a')
  t.doesNotThrow(() => slots.take('acc_b'))
  t.same([slots.heldBy('acc_a'), slots.heldBy('acc_b')], [1, 1])
})

t.test('a release frees one slot however many times it is called', async (t) => {
  const slots = new StreamSlots(2)
  const release = slots.take('acc_a')
  slots.take('acc_a')
  release()
  release()
  release()
  t.equal(slots.heldBy('acc_a'), 1, 'the other stream still holds its slot')
  slots.take('acc_a')
  t.throws(() => slots.take('acc_a'), RateLimitedError, 'the cap holds after the repeated releases')
})

t.test('an account that released every slot is forgotten', async (t) => {
  const slots = new StreamSlots(2)
  const releases = [slots.take('acc_a'), slots.take('acc_a')]
  releases.forEach((release) => release())
  t.equal(slots.heldBy('acc_a'), 0)
})

t.test('the cap defaults to 32', async (t) => {
  const slots = new StreamSlots()
  for (let i = 0; i < 32; i++) slots.take('acc_a')
  t.throws(() => slots.take('acc_a'), { message: /limit is 32/ })
})
