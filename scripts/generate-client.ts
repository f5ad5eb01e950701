/**
 * `npm run -s generate:client`: writes client/openapi.d.ts from the OpenAPI
 * document the API serves, rendered in process (no server needed).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CLIENT_TYPES_PATH, generateClientTypes, renderOpenApiDocument } from './client-types.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const text = await generateClientTypes(await renderOpenApiDocument())
await writeFile(join(root, CLIENT_TYPES_PATH), text)
console.error(`ffkube: wrote ${CLIENT_TYPES_PATH}`)
