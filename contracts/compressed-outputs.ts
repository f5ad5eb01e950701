/**
 * Outputs delivered as zips (the API's compress_outputs, CommandSpec's
 * compressOutputs): `true` zips every output of the command into one
 * `outputs.zip`, reported under the alias `out_all`; a list of declared
 * aliases stores each as `<alias>.zip`. Pure: the API checks the field at
 * submit, the runner's upload phase plans its zips from it.
 */

/** The alias `output_files` reports the zip of every output under, with `compress_outputs: true`. */
export const ALL_OUTPUTS_ALIAS = 'out_all'
/** The filename of that zip. */
export const ALL_OUTPUTS_ZIP = 'outputs.zip'

export type CompressOutputs = true | string[]

/** The zip's filename for a listed alias: `out_hls` → `out_hls.zip`. */
export function aliasZipFilename(alias: string): string {
  return `${alias}.zip`
}

/** Whether an output alias is delivered inside a zip (and so needs no probe: a zip has no media fields). */
export function isZipped(compress: CompressOutputs | undefined, alias: string): boolean {
  return compress === true || (compress !== undefined && compress.includes(alias))
}

/**
 * Why `value` cannot be used with these declared output aliases, or null.
 * The message starts after the field name: the caller prefixes it.
 */
export function compressOutputsProblem(value: CompressOutputs, declared: readonly string[]): string | null {
  if (value === true) {
    return declared.includes(ALL_OUTPUTS_ALIAS) ? `true reports every output as ${ALL_OUTPUTS_ALIAS}, which output_files already declares; rename that output` : null
  }
  if (value.length === 0) return 'must list at least one out_* alias, or be true'
  const seen = new Set<string>()
  for (const alias of value) {
    if (seen.has(alias)) return `lists ${JSON.stringify(alias)} twice`
    seen.add(alias)
    if (!declared.includes(alias)) return `${JSON.stringify(alias)} is not an alias of output_files`
  }
  return null
}
