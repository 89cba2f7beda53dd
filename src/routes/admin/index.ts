import cookie from '@fastify/cookie'
import type { FastifyInstance } from 'fastify'
import { createAdminAuth } from '../../http/admin-auth.ts'
import type { Services } from '../../services.ts'
import { adjustmentRoutes } from './adjustments.ts'
import { auditRoutes } from './audit.ts'
import { adminContext } from './common.ts'
import { customerRoutes } from './customers.ts'
import { dashboardRoutes } from './dashboard.ts'
import { eventRoutes } from './events.ts'
import { keyRoutes } from './keys.ts'
import { redemptionRoutes } from './redemptions.ts'
import { replayRoutes } from './replay.ts'
import { ruleRoutes } from './rule.ts'
import { reportRoutes } from './reports.ts'
import { rewardRoutes } from './rewards.ts'
import { importRoutes } from './imports.ts'
import { referralRoutes } from './referrals.ts'
import { sessionRoutes } from './session.ts'
import { shopRoutes } from './shops.ts'
import { streamRoutes } from './stream.ts'
import { subscriptionRoutes } from './subscriptions.ts'
import { adminBirthdayRoutes } from '../birthdays.ts'

/** The admin API under /v3/admin (docs/operate/admin-api.md). */
export async function adminRoutes(app: FastifyInstance, services: Services): Promise<void> {
  // The session cookie, parsed for the admin API only: no webhook pays for it.
  await app.register(cookie)
  const ctx = adminContext(services, createAdminAuth(services.backend.db, services.clock, services.config.PUBLIC_ORIGIN))
  await sessionRoutes(app, ctx)
  await eventRoutes(app, ctx)
  await streamRoutes(app, ctx)
  await replayRoutes(app, ctx)
  await shopRoutes(app, ctx)
  await customerRoutes(app, ctx)
  await ruleRoutes(app, ctx)
  await adjustmentRoutes(app, ctx)
  await redemptionRoutes(app, ctx)
  await keyRoutes(app, ctx)
  await auditRoutes(app, ctx)
  await subscriptionRoutes(app, ctx)
  await reportRoutes(app, ctx)
  await dashboardRoutes(app, ctx)
  await rewardRoutes(app, ctx)
  await importRoutes(app, ctx)
  await referralRoutes(app, ctx)
  await adminBirthdayRoutes(app, ctx)
}
