import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { formatInstant } from '../../domain/time.ts'
import { ADMIN_PROBLEMS, AuditList, PageQuery } from '../../schemas/admin.ts'
import { auditPage } from '../../repos/admin-repo.ts'
import { readAnswer } from '../resources.ts'
import { ADMIN_SECURITY, decodeCursor, limitOf, listOf, TAGS, type AdminContext } from './common.ts'

/** The audit log: every change made through the admin API, with the operator's name. */
export async function auditRoutes(scope: FastifyInstance, ctx: AdminContext): Promise<void> {
  const app = scope.withTypeProvider<TypeBoxTypeProvider>()
  const { db } = ctx.services.backend

  app.get(
    '/v3/admin/audit',
    {
      onRequest: ctx.onRequest,
      schema: {
        summary: 'Who changed what, when',
        operationId: 'adminAudit',
        tags: TAGS,
        security: ADMIN_SECURITY,
        querystring: PageQuery,
        response: { 200: readAnswer('A page of the audit log, newest first', AuditList), ...ADMIN_PROBLEMS() },
      },
    },
    async (request) => {
      const position = decodeCursor(request.query.cursor, ['number'])
      const page = await auditPage(db, limitOf(request.query), position === null ? null : (position[0] as number))
      return listOf(
        page,
        (r) => ({
          id: Number(r.id),
          operator: r.operator,
          action: r.action,
          shop: r.shop ?? null,
          target: r.target,
          detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
          created_at: formatInstant(r.created_at),
        }),
        (r) => [Number(r.id)],
      )
    },
  )
}
