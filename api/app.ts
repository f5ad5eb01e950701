import Fastify, { type FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Logger } from './logger.js'
import type { ReadinessProbe } from './health/readiness.js'
import { healthRoutes } from './health/routes.js'

/** What the HTTP app needs from the process that hosts it. */
export interface AppDependencies {
  logger: Logger
  probes: readonly ReadinessProbe[]
}

/** Builds the Fastify app: plugins first, then routes. Starting and stopping it is server.ts's job. */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: deps.logger }).withTypeProvider<TypeBoxTypeProvider>()
  await app.register(healthRoutes, { probes: deps.probes })
  return app as unknown as FastifyInstance
}
