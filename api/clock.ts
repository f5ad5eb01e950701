/** The current time, injected so tests can move it instead of sleeping. */
export type Clock = () => Date

export const systemClock: Clock = () => new Date()
