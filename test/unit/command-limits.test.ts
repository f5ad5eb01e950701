import t from 'tap'
import { DEFAULT_COMMAND_LIMITS, resolveLimits } from '../../api/commands/command-limits.js'
import { loadConfig } from '../../api/config.js'
import { ValidationError } from '../../api/errors/api-errors.js'

t.test("a command without limits gets its plan's defaults, with the plan's memory", async (t) => {
  t.same(resolveLimits(undefined, 'free', DEFAULT_COMMAND_LIMITS), { maxRunSeconds: 300, vcpuMillis: 1000, memoryMib: 1024, maxOutputFiles: 100 })
  t.same(resolveLimits({}, 'business', DEFAULT_COMMAND_LIMITS), { maxRunSeconds: 900, vcpuMillis: 2000, memoryMib: 8192, maxOutputFiles: 5000 })
})

t.test('limits up to the maximum are kept; vcpu_count becomes whole millicores', async (t) => {
  t.same(resolveLimits({ max_command_run_seconds: 600, vcpu_count: 1 }, 'free', DEFAULT_COMMAND_LIMITS), { maxRunSeconds: 600, vcpuMillis: 1000, memoryMib: 1024, maxOutputFiles: 100 })
  t.equal(resolveLimits({ vcpu_count: 0.1234 }, 'growth', DEFAULT_COMMAND_LIMITS).vcpuMillis, 123)
})

t.test('a limit above the plan maximum is 422 naming the field, the maximum and the plan', async (t) => {
  const cases: Array<[Parameters<typeof resolveLimits>[0], Parameters<typeof resolveLimits>[1], RegExp]> = [
    [{ max_command_run_seconds: 601 }, 'free', /^max_command_run_seconds: at most 600 on the free plan, got 601$/],
    [{ vcpu_count: 1.5 }, 'free', /^vcpu_count: at most 1 on the free plan, got 1.5$/],
    [{ vcpu_count: 9 }, 'business', /^vcpu_count: at most 8 on the business plan/],
  ]
  for (const [requested, plan, message] of cases) {
    t.throws(() => resolveLimits(requested, plan, DEFAULT_COMMAND_LIMITS), { constructor: ValidationError, message }, message.source)
  }
  t.throws(() => resolveLimits({ vcpu_count: 9 }, 'business', DEFAULT_COMMAND_LIMITS, 'commands[2].'), { message: /^commands\[2\]\.vcpu_count:/ }, 'a multiple request names which command')
})

t.test('the plan limits are configurable by variable, and a bad value stops the start naming it', async (t) => {
  const config = loadConfig({ COMMAND_RUN_SECONDS_MAX_FREE: '1200', COMMAND_VCPU_MAX_FREE: '1.5', COMMAND_MEMORY_MIB_FREE: '512', COMMAND_MAX_OUTPUT_FILES_FREE: '20' })
  t.match(config.commandLimits.free, { runSecondsDefault: 300, runSecondsMax: 1200, vcpuMax: 1.5, memoryMib: 512, maxOutputFiles: 20 })
  t.same(config.commandLimits.business, DEFAULT_COMMAND_LIMITS.business)
  t.throws(() => loadConfig({ COMMAND_VCPU_MAX_GROWTH: 'two' }), { message: /COMMAND_VCPU_MAX_GROWTH/ })
  t.throws(() => loadConfig({ COMMAND_RUN_SECONDS_MAX_TRIAL: '100000' }), { message: /COMMAND_RUN_SECONDS_MAX_TRIAL must be at most 86400/ })
  t.throws(() => loadConfig({ COMMAND_RUN_SECONDS_DEFAULT_FREE: '700' }), { message: /COMMAND_RUN_SECONDS_DEFAULT_FREE \(700\) must not exceed COMMAND_RUN_SECONDS_MAX_FREE \(600\)/ })
  t.throws(() => loadConfig({ COMMAND_VCPU_DEFAULT_BUSINESS: '0.05' }), { message: /COMMAND_VCPU_DEFAULT_BUSINESS/ })
  t.throws(() => loadConfig({ COMMAND_MEMORY_MIB_FREE: '32' }), { message: /COMMAND_MEMORY_MIB_FREE must be at least 64/ })
  t.throws(() => loadConfig({ COMMAND_MAX_OUTPUT_FILES_GROWTH: '0' }), { message: /COMMAND_MAX_OUTPUT_FILES_GROWTH must be a whole number of at least 1/ })
})
