/**
 * The throughput bench's ceiling (bench/throughput.ts): a plain Pod of the
 * runner image doing a command's work with nothing of ffkube around it. One
 * container, one Node process: fetch the input over HTTP, remux it with the
 * image's ffmpeg, store the result with the same S3 SDK the runner uses.
 * What a person would write by hand to do the remux on this node; the
 * restricted security context of the runner's pods, so the runtime does the
 * same setup for both.
 */
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node'

/** The label the bench finds its bare pods by. */
export const LABEL_BARE_RUN = 'bench.ffkube.io/run'

export interface BareRemuxPod {
  name: string
  namespace: string
  /** The value of LABEL_BARE_RUN: one per burst. */
  run: string
  image: string
  inputUrl: string
  /** Where the remuxed file goes: the lane's managed bucket, a key of the bench's own. */
  s3: { endpoint: string; region: string; bucket: string; key: string; accessKeyId: string; secretAccessKey: string }
  resources: V1ResourceRequirements
  runAsUser: number
}

/**
 * The container's program (CommonJS, `node -e`): what the runner's fetch, run
 * and upload phases do for a one-input remux, without the status events, the
 * probe and the policy.
 */
const PROGRAM = `
const { writeFile, readFile } = require('node:fs/promises')
const { execFileSync } = require('node:child_process')
const { S3Client, PutObjectCommand } = require('/app/node_modules/@aws-sdk/client-s3')
;(async () => {
  const e = process.env
  const answer = await fetch(e.INPUT_URL)
  if (!answer.ok) throw new Error('input answered ' + answer.status)
  await writeFile('/work/input.mp4', Buffer.from(await answer.arrayBuffer()))
  execFileSync(e.FFMPEG_PATH, ['-hide_banner', '-loglevel', 'error', '-y', '-i', '/work/input.mp4', '-map', '0', '-c', 'copy', '/work/remux.mkv'], { stdio: 'inherit' })
  const s3 = new S3Client({ endpoint: e.S3_ENDPOINT, region: e.S3_REGION, forcePathStyle: true, credentials: { accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY } })
  await s3.send(new PutObjectCommand({ Bucket: e.S3_BUCKET, Key: e.S3_KEY, Body: await readFile('/work/remux.mkv') }))
})().catch((err) => { console.error(err); process.exit(1) })
`

export function buildBareRemuxPod(p: BareRemuxPod): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, labels: { [LABEL_BARE_RUN]: p.run } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: { runAsNonRoot: true, runAsUser: p.runAsUser, runAsGroup: p.runAsUser, fsGroup: p.runAsUser, seccompProfile: { type: 'RuntimeDefault' } },
      volumes: [{ name: 'work', emptyDir: { sizeLimit: '1Gi' } }],
      containers: [{
        name: 'remux',
        image: p.image,
        imagePullPolicy: 'IfNotPresent',
        command: ['node', '-e', PROGRAM],
        workingDir: '/work',
        env: [
          { name: 'INPUT_URL', value: p.inputUrl },
          { name: 'HOME', value: '/work/.home' },
          { name: 'TMPDIR', value: '/work' },
          { name: 'S3_ENDPOINT', value: p.s3.endpoint },
          { name: 'S3_REGION', value: p.s3.region },
          { name: 'S3_BUCKET', value: p.s3.bucket },
          { name: 'S3_KEY', value: p.s3.key },
          // A bench pod in a namespace of its own: the credentials ride in its env, which no ffkube pod does.
          { name: 'S3_ACCESS_KEY_ID', value: p.s3.accessKeyId },
          { name: 'S3_SECRET_ACCESS_KEY', value: p.s3.secretAccessKey },
        ],
        volumeMounts: [{ name: 'work', mountPath: '/work' }],
        resources: p.resources,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: p.runAsUser,
          runAsGroup: p.runAsUser,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
      }],
    },
  }
}
