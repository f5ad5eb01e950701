/** A command or file status, coloured by class. */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.toLowerCase()}`}>{status}</span>
}
