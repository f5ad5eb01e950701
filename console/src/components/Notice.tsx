/** An error (role=alert, announced at once) or a status message (role=status, announced politely). */
export function ErrorNotice({ message }: { message: string | null }) {
  return message ? (
    <p class="notice error" role="alert">
      {message}
    </p>
  ) : null
}

export function StatusNotice({ message }: { message: string | null }) {
  return (
    <p class="notice status" role="status">
      {message ?? ''}
    </p>
  )
}
