import Fastify, { type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Db } from 'mongodb'
import { AccountRepository } from './accounts/account-repository.js'
import { authentication } from './accounts/authentication.js'
import type { SecretBox } from './crypto/secret-box.js'
import { errorHandler, routeNotFound } from './errors/error-handler.js'
import type { ReadinessProbe } from './health/readiness.js'
import { healthRoutes } from './health/routes.js'
import type { Logger } from './logger.js'

/** What the HTTP app needs from the process that hosts it. */
export interface AppDependencies {
  logger: Logger
  probes: readonly ReadinessProbe[]
  db: Db
  secretBox: SecretBox
}

/** Builds the Fastify app: plugins first, then routes. Starting and stopping it is server.ts's job. */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: deps.logger }).withTypeProvider<TypeBoxTypeProvider>()
  await app.register(errorHandler)

  const accounts = new AccountRepository(deps.db, deps.secretBox)
  await accounts.ensureIndexes()
  app.decorate('accounts', accounts)

  await app.register(healthRoutes, { probes: deps.probes })
  await app.register(
    async (v1) => {
      await v1.register(authentication, { accounts })
      // Unknown /api/v1 paths go through authentication too, so they do not reveal the route table.
      v1.setNotFoundHandler(routeNotFound)
      // Resource route plugins register here, one per folder under api/.
    },
    { prefix: '/api/v1' },
  )
  return app as unknown as FastifyInstance
}
