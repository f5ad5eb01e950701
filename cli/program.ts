/**
 * The `ffkube` command line, declared with commander: each subcommand parses
 * its arguments and hands them to an action in commands/, which answers the
 * exit code.
 */
import { Command, Option } from 'commander'
import type { CliContext } from './context.js'
import { cancelAction, listAction, logsAction, statusAction } from './commands/queries.js'
import { setConfigAction, showConfigAction } from './commands/config.js'
import { uploadAction } from './commands/files.js'
import { listPresetsAction, showPresetAction } from './commands/presets.js'
import { executePresetAction, runAction, waitAction } from './commands/run.js'
import { usageAction } from './commands/usage.js'
import { deleteWebhookAction, getWebhookAction, setWebhookAction } from './commands/webhook.js'
import { deleteCookiesAction, getCookiesAction, setCookiesAction } from './commands/ytdlp-cookies.js'
import { collect } from './pairs.js'

const FOOTER = `
Configuration: FFKUBE_URL and FFKUBE_API_KEY, else the file \`ffkube config set\` writes
($XDG_CONFIG_HOME/ffkube/config.json, by default ~/.config/ffkube/config.json).

Exit codes: 0 success; 1 the command ended FAILED; 2 usage or configuration error;
3 the API refused the request or could not be reached; 130 interrupted (the command keeps running).

Example:
  ffkube run --in in_video=https://example.com/clip.mp4 --out out_small=small.mp4 \\
    'ffmpeg -i {{in_video}} -vf scale=320:-2 {{out_small}}'`

/** The options of every subcommand that follows a command to its end. */
function finishOptions(command: Command): Command {
  return command
    .option('--no-download', 'do not download the outputs; print their URLs')
    .option('--force', 'replace files that exist in the target directory', false)
    .option('--dir <path>', 'where to write the outputs (default: the current directory)')
    .option('--json', 'print the final command as JSON on stdout', false)
}

/** The options of every subcommand that submits a command. */
function submitOptions(command: Command): Command {
  return finishOptions(
    command
      .option('--in <alias=url>', 'an input: in_* alias and URL, or a local file (uploaded first); repeatable', collect, [])
      .option('--metadata <key=value>', 'metadata stored with the command; repeatable', collect, [])
      .option('--webhook-url <url>', 'a webhook for this command only (Business plan)')
      .option('--max-seconds <n>', 'whole-command time limit in seconds')
      .option('--vcpu <n>', 'CPU cores the tools may use, e.g. 0.5')
      .option('--retention-days <n>', "days the managed outputs are kept before they are deleted (at most the plan's retention, the default)")
      .option('--detach', 'print the command id and return at once', false),
  )
}

/**
 * The program for one invocation. `done` receives each action's exit code;
 * commander's own errors (unknown option, missing argument) are thrown by
 * exitOverride and mapped to 2 by main.ts.
 */
export function buildProgram(context: CliContext, done: (code: number) => void): Command {
  const program = new Command('ffkube')
    .description('Run FFmpeg commands on an ffkube service, follow them and fetch their outputs.')
    .addHelpText('after', FOOTER)
    .configureOutput({ writeOut: context.out, writeErr: context.err })
    .showHelpAfterError('(ffkube --help shows the usage)')
    .exitOverride()
  const act =
    <Args extends unknown[]>(action: (...args: Args) => Promise<number>) =>
    async (...args: Args) =>
      done(await action(...args))

  submitOptions(
    program
      .command('run')
      .description('submit an FFmpeg command, show its progress until it ends, and download its outputs')
      .argument('<command...>', 'the ffmpeg command, quoted; several quoted commands run chained in one sandbox')
      .option('--out <alias=filename>', 'an output: out_* alias and file name; repeatable', collect, [])
      .option('--storage-destination <id>', 'write the outputs to a storage destination (Business plan)')
      .option('--folder <zip>', 'a zip (URL, or a local file uploaded first) unpacked into the work directory; commands name its files by relative path'),
  ).action(act((commands: string[], options) => runAction(context, commands, options)))

  finishOptions(program.command('wait').description('follow a submitted command to its end, then download its outputs').argument('<commandId>')).action(
    act((commandId: string, options) => waitAction(context, commandId, options)),
  )

  program
    .command('status')
    .description("show a command's status, error and outputs (exit 1 when it ended FAILED)")
    .argument('<commandId>')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((commandId: string, options) => statusAction(context, commandId, options)))

  program
    .command('list')
    .description('list commands, newest first')
    .addOption(new Option('--status <status>', 'only commands in this status').choices(['QUEUED', 'PROCESSING', 'SUCCESS', 'FAILED']))
    .option('--limit <n>', 'page size, 1 to 100 (default 50)')
    .option('--offset <n>', 'commands to skip')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((options) => listAction(context, options)))

  program.command('cancel').description('cancel a QUEUED or PROCESSING command').argument('<commandId>').action(act((commandId: string) => cancelAction(context, commandId)))

  program
    .command('logs')
    .description("print a command's log (the tools' stderr)")
    .argument('<commandId>')
    .option('--tail <n>', 'only the last n lines')
    .action(act((commandId: string, options) => logsAction(context, commandId, options)))

  program
    .command('upload')
    .description('upload a file to managed storage; prints its file id and, once stored, its URL (usable as an input)')
    .argument('<file>')
    .option('--no-wait', 'print the file id at once, before the file is stored')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((file: string, options) => uploadAction(context, file, options)))

  program
    .command('usage')
    .description("the account's storage against its plan's quota, and its usage by UTC day")
    .option('--days <n>', 'UTC days ending with today, 1 to 366 (default 30)')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((options) => usageAction(context, options)))

  const presets = program.command('presets').description('list, show and run presets')
  presets
    .command('list')
    .description("your presets and the system's")
    .option('--limit <n>', 'page size, 1 to 100 (default 50)')
    .option('--offset <n>', 'presets to skip')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((options) => listPresetsAction(context, options)))
  presets
    .command('show')
    .argument('<presetId>')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((presetId: string, options) => showPresetAction(context, presetId, options)))
  submitOptions(presets.command('run').description('execute a preset with its inputs, follow it and download its outputs').argument('<presetId>')).action(
    act((presetId: string, options) => executePresetAction(context, presetId, options)),
  )

  const webhook = program.command('webhook').description("the account's webhook")
  webhook
    .command('get')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((options) => getWebhookAction(context, options)))
  webhook
    .command('set')
    .description('set the webhook URL (re-enables it and resets its failure count)')
    .argument('<url>')
    .option('--secret <secret>', 'sign deliveries with this secret (X-Webhook-Signature)')
    .action(act((url: string, options) => setWebhookAction(context, url, options)))
  webhook.command('delete').description('deactivate the webhook; its configuration is kept').action(act(() => deleteWebhookAction(context)))

  const cookies = program.command('cookies').description("the account's cookies.txt for its yt-dlp downloads (trial, Growth, Business)")
  cookies
    .command('get')
    .description('how many cookies are stored, for which domains (never the cookies)')
    .option('--json', 'print the API answer as JSON', false)
    .action(act((options) => getCookiesAction(context, options)))
  cookies
    .command('set')
    .description('upload a Netscape cookies.txt (- reads it from stdin); replaces the stored one')
    .argument('<file>')
    .action(act((file: string) => setCookiesAction(context, file)))
  cookies.command('delete').description('delete the stored cookies').action(act(() => deleteCookiesAction(context)))

  const config = program.command('config').description('the config file FFKUBE_URL and FFKUBE_API_KEY override')
  config
    .command('set')
    .description('save url or api-key (a value of - reads it from stdin)')
    .argument('<key>', 'url or api-key')
    .argument('<value>')
    .action(act((key: string, value: string) => setConfigAction(context, key, value)))
  config.command('show').description('where the URL and key come from').action(act(() => showConfigAction(context)))

  return program
}
