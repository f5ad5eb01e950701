import { writeFile } from 'node:fs/promises'

/** Writes a kubeconfig (JSON is YAML) for a bearer token against `server`, trusting `caFile`. */
export async function writeKubeconfig(path: string, server: string, caFile: string, token: string): Promise<string> {
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'node', cluster: { server, 'certificate-authority': caFile } }],
      users: [{ name: 'node', user: { token } }],
      contexts: [{ name: 'node', context: { cluster: 'node', user: 'node' } }],
      'current-context': 'node',
    }),
  )
  return path
}
