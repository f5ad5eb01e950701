import t from 'tap'
import { capNeeded, sharesOf } from '../../api/executors/cpu-caps.js'

t.test('a run gets a CPU group only when its vcpu_count is below the host cores', async (t) => {
  const cases: Array<[number, number, boolean]> = [
    [500, 2, true],
    [1000, 2, true],
    [1999, 2, true],
    [2000, 2, false],
    [8000, 2, false],
    [2000, 4, true],
  ]
  for (const [millis, cores, needed] of cases) t.equal(capNeeded(millis, cores), needed, `${millis} millicores on ${cores} cores`)
})

t.test("a group weighs as many tasks as its cores, never below the kernel's floor of 2", async (t) => {
  const cases: Array<[number, number]> = [
    [1000, 1024],
    [500, 512],
    [2000, 2048],
    [100, 102],
    [1, 2],
  ]
  for (const [millis, shares] of cases) t.equal(sharesOf(millis), shares, `${millis} millicores`)
})
