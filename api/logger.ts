import { pino, type Logger } from 'pino'

/** pino JSON logs; `service` names the process so a merged log still says who spoke. */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({ level, base: { service }, timestamp: pino.stdTimeFunctions.isoTime })
}

export type { Logger }
