/**
 * Names RUNNER_ENV (the chart's `runners.env`) may not set, each with where
 * its value comes from instead. They are the operator's to give a runner
 * container, and a second value would quietly win: a runner told another
 * bucket or endpoint than the API's uploads there, and the projector then
 * fails every run with OUTPUT_OUTSIDE_COMMAND_FOLDER, far from the cause; one
 * told another NATS_URL or reporter never ends. The chart refuses the same
 * names in templates/operator.yaml (test/chart/render.test.ts holds the two
 * lists together); the operator refuses them too because its environment can
 * be edited by hand.
 */
import { DESTINATION_CREDENTIALS_FILE_ENV } from '../contracts/destination-credentials.js'
import { SANDBOX_ENV } from '../contracts/sandbox.js'
import { YTDLP_COOKIES_DIR_ENV, YTDLP_COOKIES_FILE_ENV, YTDLP_COOKIES_SOURCE_ENV } from '../contracts/ytdlp-cookies.js'

const SAME_AS_THE_API = 'the operator passes its own, which the chart sets from'
const PER_POD = 'the operator sets it in each runner pod'

export const RESERVED_RUNNER_ENV: Readonly<Record<string, string>> = {
  S3_BUCKET: `${SAME_AS_THE_API} config.s3.bucket`,
  S3_ENDPOINT: `${SAME_AS_THE_API} config.s3.endpoint`,
  S3_REGION: `${SAME_AS_THE_API} config.s3.region`,
  S3_FORCE_PATH_STYLE: `${SAME_AS_THE_API} config.s3.forcePathStyle`,
  ALLOW_PRIVATE_NETWORKS: `${SAME_AS_THE_API} config.allowPrivateNetworks`,
  NATS_URL: `${SAME_AS_THE_API} config.nats.url`,
  FFKUBE_STATUS_REPORTER: PER_POD,
  FFKUBE_COMMAND_ID: PER_POD,
  FFKUBE_COMMAND_SPEC: PER_POD,
  FFKUBE_WORK_DIR: PER_POD,
  TMPDIR: PER_POD,
  HOME: PER_POD,
  S3_CREDENTIALS_FILE: `${PER_POD} (runners.uploadSecret)`,
  [DESTINATION_CREDENTIALS_FILE_ENV]: PER_POD,
  [YTDLP_COOKIES_SOURCE_ENV]: PER_POD,
  [YTDLP_COOKIES_DIR_ENV]: PER_POD,
  [YTDLP_COOKIES_FILE_ENV]: "local mode only: a pod's cookies come from the account's Secret",
  // Local mode's jail: a pod is its own, and bwrap cannot run in it (contracts/sandbox.ts).
  [SANDBOX_ENV]: 'local mode only; a runner pod is its own sandbox',
}

/** The first name of `env` that is reserved, or undefined. */
export function reservedRunnerEnvName(env: Record<string, string>): string | undefined {
  return Object.keys(env).sort().find((name) => Object.hasOwn(RESERVED_RUNNER_ENV, name))
}
