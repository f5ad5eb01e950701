import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { planFeatures } from '../accounts/plans.js'
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors/api-errors.js'
import { PageQuery, pageOf } from '../pagination.js'
import { testConnection } from './connection-test.js'
import {
  normalizeEndpointUrl,
  normalizeName,
  normalizePrefix,
  normalizePublicBaseUrl,
  validateBucket,
  validateRegion,
} from './destination-rules.js'
import {
  ConnectionTestResponse,
  CreateStorageDestinationBody,
  ErrorResponse,
  StorageDestinationList,
  StorageDestinationParams,
  StorageDestinationResponse,
  UpdateStorageDestinationBody,
} from './schemas.js'
import type { NewStorageDestination, StorageDestinationChanges, StorageDestinationDocument, StorageDestinationRepository } from './storage-destination-repository.js'

const IMMUTABLE_FIELDS = ['endpoint_url', 'region', 'bucket'] as const

function toResponse(doc: StorageDestinationDocument): StorageDestinationResponse {
  return {
    storage_destination_id: doc._id,
    name: doc.name,
    endpoint_url: doc.endpoint_url,
    region: doc.region,
    bucket: doc.bucket,
    prefix: doc.prefix,
    public_base_url: doc.public_base_url,
    path_style: doc.path_style,
    credentials: { access_key_id_masked: doc.access_key_id_masked },
    is_active: doc.is_active,
    disabled_at: doc.disabled_at ? doc.disabled_at.toISOString() : null,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  }
}

/** A creation body, checked and normalized (destination-rules.ts). */
function creationOf(body: CreateStorageDestinationBody, allowPrivateNetworks: boolean): NewStorageDestination {
  return {
    name: normalizeName(body.name),
    endpoint_url: normalizeEndpointUrl(body.endpoint_url, allowPrivateNetworks),
    region: validateRegion(body.region),
    bucket: validateBucket(body.bucket),
    prefix: normalizePrefix(body.prefix ?? ''),
    public_base_url: body.public_base_url ? normalizePublicBaseUrl(body.public_base_url) : null,
    path_style: body.path_style ?? false,
    credentials: body.credentials,
  }
}

/** A PATCH body's changes, checked and normalized: never an immutable field, at least one field. */
function changesOf(body: UpdateStorageDestinationBody): StorageDestinationChanges {
  const immutable = IMMUTABLE_FIELDS.find((field) => body[field] !== undefined)
  if (immutable) throw new ValidationError(`${immutable}: cannot be changed; create a new storage destination instead`)
  const changes: StorageDestinationChanges = {
    name: body.name === undefined ? undefined : normalizeName(body.name),
    prefix: body.prefix === undefined ? undefined : normalizePrefix(body.prefix),
    public_base_url: body.public_base_url === undefined ? undefined : body.public_base_url === null ? null : normalizePublicBaseUrl(body.public_base_url),
    path_style: body.path_style,
    credentials: body.credentials,
  }
  if (Object.values(changes).every((value) => value === undefined)) {
    throw new ValidationError('body: name, prefix, public_base_url, path_style or credentials is required')
  }
  return changes
}

const errors = { 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 429: ErrorResponse }
const tags = ['storage destinations']
// The spec leaves these routes' error statuses open; every body problem here is 422 VALIDATION_ERROR.
const config = { validationErrorStatus: 422 as const }

/**
 * The six storage-destination routes: Business plan only, each account sees
 * only its own destinations (another's id, or a malformed one, is 404).
 */
export const storageDestinationRoutes: FastifyPluginAsyncTypebox<{ allowPrivateNetworks: boolean }> = async (
  app,
  { allowPrivateNetworks },
) => {
  const destinations = app.storageDestinations

  // onRequest, not preHandler: the plan decides before the body is even validated.
  app.addHook('onRequest', async (request) => {
    if (!planFeatures(request.account.plan).businessFeatures) {
      throw new ForbiddenError('storage destinations require the Business plan')
    }
  })

  app.get(
    '/storage-destinations',
    { schema: { summary: "List the account's storage destinations", tags, querystring: PageQuery, response: { 200: StorageDestinationList, 400: ErrorResponse, ...errors } } },
    async (request) => {
      const { limit, offset } = pageOf(request.query)
      const docs = await destinations.list(request.account.id, limit, offset)
      return { storage_destinations: docs.map(toResponse), limit, offset }
    },
  )

  app.post(
    '/storage-destinations',
    {
      config,
      schema: { summary: 'Create a storage destination', tags, body: CreateStorageDestinationBody, response: { 201: StorageDestinationResponse, 409: ErrorResponse, 422: ErrorResponse, ...errors } },
    },
    async (request, reply) => {
      const doc = await destinations.create(request.account.id, creationOf(request.body, allowPrivateNetworks))
      request.log.info({ account_id: request.account.id, storage_destination_id: doc._id }, 'storage destination created')
      return reply.code(201).send(toResponse(doc))
    },
  )

  app.get(
    '/storage-destinations/:storageDestinationId',
    { schema: { summary: 'Get a storage destination', tags, params: StorageDestinationParams, response: { 200: StorageDestinationResponse, ...errors } } },
    async (request) => toResponse(await findOwn(destinations, request.account.id, request.params.storageDestinationId)),
  )

  app.patch(
    '/storage-destinations/:storageDestinationId',
    {
      config,
      schema: {
        summary: 'Update a storage destination',
        tags,
        params: StorageDestinationParams,
        body: UpdateStorageDestinationBody,
        response: { 200: StorageDestinationResponse, 409: ErrorResponse, 422: ErrorResponse, ...errors },
      },
    },
    async (request) => {
      const id = request.params.storageDestinationId
      // Ownership first, so another account's id is 404 whatever the body says.
      await findOwn(destinations, request.account.id, id)
      const updated = await destinations.update(request.account.id, id, changesOf(request.body))
      if (!updated) throw new NotFoundError(`storageDestinationId: no storage destination ${id}`)
      request.log.info({ account_id: request.account.id, storage_destination_id: id }, 'storage destination updated')
      return toResponse(updated)
    },
  )

  app.delete(
    '/storage-destinations/:storageDestinationId',
    { schema: { summary: 'Disable a storage destination (bucket objects are kept)', tags, params: StorageDestinationParams, response: { 200: StorageDestinationResponse, ...errors } } },
    async (request) => {
      const id = request.params.storageDestinationId
      const disabled = await destinations.disable(request.account.id, id)
      if (!disabled) throw new NotFoundError(`storageDestinationId: no storage destination ${id}`)
      request.log.info({ account_id: request.account.id, storage_destination_id: id }, 'storage destination disabled')
      return toResponse(disabled)
    },
  )

  await connectionTestRoute(app, { allowPrivateNetworks })
}

/** POST …/test: a real write, read, verify and delete in the destination's bucket (connection-test.ts). */
const connectionTestRoute: FastifyPluginAsyncTypebox<{ allowPrivateNetworks: boolean }> = async (app, { allowPrivateNetworks }) => {
  const destinations = app.storageDestinations
  app.post(
    '/storage-destinations/:storageDestinationId/test',
    { schema: { summary: 'Test a storage destination: write, read back, verify and delete an object', tags, params: StorageDestinationParams, response: { 200: ConnectionTestResponse, 409: ErrorResponse, ...errors } } },
    async (request) => {
      const destination = await findOwn(destinations, request.account.id, request.params.storageDestinationId)
      if (!destination.is_active) throw new ConflictError(`storageDestinationId: storage destination ${destination._id} is disabled`)
      return testConnection(destination, destinations.openCredentials(destination), { allowPrivateNetworks, logger: request.log })
    },
  )
}

/** The account's destination, or 404 (another account's is as good as missing). */
async function findOwn(destinations: StorageDestinationRepository, accountId: string, id: string): Promise<StorageDestinationDocument> {
  const found = await destinations.find(accountId, id)
  if (!found) throw new NotFoundError(`storageDestinationId: no storage destination ${id}`)
  return found
}
