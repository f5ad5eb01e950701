import { randomUUID } from 'node:crypto'

/**
 * Command ids are lowercase UUIDs: DESIGN.md makes the command_id the
 * MediaCommand's name, and Kubernetes names must be lowercase DNS subdomains.
 */
export function newCommandId(): string {
  return randomUUID()
}

const COMMAND_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export function isCommandId(value: string): boolean {
  return COMMAND_ID.test(value)
}
