import { isStorableText } from '../../schemas/common.ts'
import type { Backend } from '../../db/dialect.ts'
import { findShop } from '../../repos/keys-repo.ts'
import { notFound } from '../problem.ts'

/** The `{shop}` segment of an admin path: the shop of that name, or a 404 (without asking the database for a name it could not hold, such as one with a NUL). */
export async function shopByName(
  services: { backend: Pick<Backend, 'db'> },
  name: string,
): Promise<{ id: number; name: string; created_at: string; time_zone: string }> {
  const shop = isStorableText(name) ? await findShop(services.backend.db, name) : undefined
  if (!shop) throw notFound(`no shop named ${name}`)
  return { id: Number(shop.id), name: shop.name, created_at: shop.created_at, time_zone: shop.time_zone }
}
