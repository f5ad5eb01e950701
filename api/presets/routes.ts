import { errorResponses } from '../errors/error-response.js'
import { pageOf } from '../pagination.js'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '../errors/api-errors.js'
import { toPresetResponse } from './preset-repository.js'
import { checkPresetDefinition, definitionFromCreate, definitionFromUpdate, draftsForExecution } from './preset-rules.js'
import {
  CreatePresetBody,
  DeletePresetResponse,
  ExecutePresetBody,
  ExecutePresetResponse,
  ListPresetsQuery,
  PresetListResponse,
  PresetParams,
  PresetResponse,
  UpdatePresetBody,
} from './schemas.js'

const notFound = (presetId: string) => new NotFoundError(`presetId: no preset ${presetId} of this account`)

/** The preset endpoints: create, list, get, update, delete, execute. */
export const presetRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/presets', { schema: { tags: ['presets'], body: CreatePresetBody, response: { 201: PresetResponse, ...errorResponses(400, 422) } } }, async (request, reply) => {
    const definition = checkPresetDefinition(definitionFromCreate(request.body))
    const doc = await app.presets.create(request.account.id, definition)
    request.log.info({ preset_id: doc._id, account_id: request.account.id }, 'preset created')
    return reply.code(201).send(toPresetResponse(doc))
  })

  app.get('/presets', { schema: { tags: ['presets'], querystring: ListPresetsQuery, response: { 200: PresetListResponse, ...errorResponses(400) } } }, async (request) => {
    const { limit, offset } = pageOf(request.query)
    const docs = await app.presets.list(request.account.id, { limit, offset })
    return { presets: docs.map(toPresetResponse), limit, offset }
  })

  app.get('/presets/:presetId', { schema: { tags: ['presets'], params: PresetParams, response: { 200: PresetResponse, ...errorResponses(404) } } }, async (request) => {
    const doc = await app.presets.findReadable(request.account.id, request.params.presetId)
    if (!doc) throw notFound(request.params.presetId)
    return toPresetResponse(doc)
  })

  app.put(
    '/presets/:presetId',
    { schema: { tags: ['presets'], params: PresetParams, body: UpdatePresetBody, response: { 200: PresetResponse, ...errorResponses(400, 404, 422) } } },
    async (request) => {
      const { presetId } = request.params
      const existing = await app.presets.findOwn(request.account.id, presetId)
      if (!existing) throw notFound(presetId)
      const definition = checkPresetDefinition(definitionFromUpdate(existing, request.body))
      const doc = await app.presets.replace(request.account.id, presetId, definition)
      if (!doc) throw notFound(presetId)
      return toPresetResponse(doc)
    },
  )

  app.delete('/presets/:presetId', { schema: { tags: ['presets'], params: PresetParams, response: { 200: DeletePresetResponse, ...errorResponses(404) } } }, async (request) => {
    const { presetId } = request.params
    if (!(await app.presets.delete(request.account.id, presetId))) throw notFound(presetId)
    return { deleted: true as const, preset_id: presetId }
  })

  app.post(
    '/presets/:presetId/execute',
    {
      schema: { tags: ['presets'], params: PresetParams, body: ExecutePresetBody, response: { 200: ExecutePresetResponse, ...errorResponses(403, 404, 422) } },
      config: { validationErrorStatus: 422 },
    },
    async (request) => {
      const preset = await app.presets.findReadable(request.account.id, request.params.presetId)
      if (!preset) throw notFound(request.params.presetId)
      const ids = await app.commandSubmission.submit(request.account, draftsForExecution(preset, request.body), request.log)
      return ids.length === 1 ? { command_id: ids[0]! } : { command_id: ids[0]!, command_ids: ids }
    },
  )
}
