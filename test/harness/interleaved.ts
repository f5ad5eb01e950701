/**
 * Races staged from the outside: `interleaved(repository, around)` is the
 * repository as production code gets it, except that each call of one of its
 * async methods (and of the objects it holds, such as a work list) runs
 * through `around(step, work)`, with `step` the method's path
 * (`claimForAccount`, `schedule.release`, `dispatch.finish`, …). A seeded
 * scheduler's `step` there orders two dispatchers' or projectors' writes
 * against each other; a promise there holds one write back until another
 * happened. Production code carries no hook for it (STYLE.md, habit 11).
 */
export type Around = <T>(step: string, work: () => Promise<T>, args: readonly unknown[]) => Promise<T>

const AsyncFunction = (async () => {}).constructor

export function interleaved<T extends object>(target: T, around: Around, path = ''): T {
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object)
      if (typeof property === 'symbol' || value === null || (typeof value !== 'object' && typeof value !== 'function')) return value
      if (!wrapped.has(property)) wrapped.set(property, wrap(object, property, value, around, `${path}${property}`))
      return wrapped.get(property)
    },
  })
}

function wrap(owner: object, property: string, value: object, around: Around, step: string): unknown {
  if (typeof value !== 'function') return interleaved(value, around, `${step}.`)
  const method = value as (...args: unknown[]) => unknown
  // Synchronous methods (a work list's `waiting()`) are no I/O: called as they are.
  if (!(method instanceof AsyncFunction)) return method.bind(owner)
  return (...args: unknown[]) => around(step, () => method.apply(owner, args) as Promise<unknown>, args)
}
