/** A command's progress, 0–100; indeterminate (no value) while the figure is unknown. */
export function ProgressBar({ value, label }: { value: number | null | undefined; label: string }) {
  const known = value !== null && value !== undefined
  return (
    <span class="progress">
      <progress aria-label={label} max={100} {...(known ? { value } : {})} />
      <span aria-hidden="true">{known ? `${Math.round(value)}%` : '…'}</span>
    </span>
  )
}
