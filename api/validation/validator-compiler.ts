import AjvCompiler from '@fastify/ajv-compiler'
import { ERROR_STATUS_KEYWORD } from './error-status.js'

type BuildCompiler = AjvCompiler.BuildCompilerFromPool
type CompilerOptions = NonNullable<Parameters<BuildCompiler>[1]>
/** What Fastify passes the compiler for each schema of a route (the typings only say `schema`). */
type RouteSchema = { schema: unknown; httpPart?: string }
type Compile = (route: RouteSchema) => unknown

/**
 * Two Ajv instances, by the part of the request they validate. A JSON body is
 * validated as sent: Fastify's default `coerceTypes` would turn `7` into `"7"`
 * and a string into a one-element array, so a wrong type would pass as a right
 * one. Query strings, path parameters and headers arrive as text, so there
 * coercion is how `?limit=10` becomes a number.
 */
export const buildValidator: BuildCompiler = (externalSchemas, serverOptions) => {
  const base: CompilerOptions = serverOptions ?? {}
  const withOptions = (custom: Record<string, unknown>) =>
    ({
      ...base,
      customOptions: { ...base.customOptions, ...custom, keywords: [...((base.customOptions?.keywords as string[] | undefined) ?? []), ERROR_STATUS_KEYWORD] },
    }) as CompilerOptions
  // removeAdditional off too: an unknown field is refused by name instead of silently dropped.
  // verbose: the failing value in each error, for a message that says what was wrong with it.
  const asSent = AjvCompiler()(externalSchemas, withOptions({ coerceTypes: false, removeAdditional: false, verbose: true })) as unknown as Compile
  const fromText = AjvCompiler()(externalSchemas, withOptions({})) as unknown as Compile
  const compile: Compile = (route) => (route.httpPart === 'body' ? asSent : fromText)(route)
  return compile as unknown as ReturnType<BuildCompiler>
}
