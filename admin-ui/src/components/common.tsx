import { signal } from '@preact/signals'
import { api, ApiError, type Page, type ShopSummary } from '../api.ts'

/** The shops, loaded once after sign-in (Overview reloads them); every page picks from them. */
export const shops = signal<ShopSummary[] | null>(null)

export async function loadShops(): Promise<ShopSummary[]> {
  const page = await api<Page<ShopSummary>>('GET', '/v3/admin/shops?limit=500')
  shops.value = page.items
  return page.items
}

export function Outcome({ outcome }: { outcome: string }) {
  return <span class={`badge o-${outcome}`}>{outcome}</span>
}

/** A failure to show: the problem's title, detail and field errors, or the error's message. */
export function ErrorBox({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null
  if (error instanceof ApiError) {
    const p = error.problem
    return (
      <div class="error" role="alert">
        <strong>
          {p.status} {p.title}
        </strong>
        {p.detail ? `: ${p.detail}` : ''}
        {p.errors && p.errors.length > 0 && (
          <ul>
            {p.errors.map((e) => (
              <li>
                <code>{e.pointer || '(body)'}</code> {e.detail}
              </li>
            ))}
          </ul>
        )}
      </div>
    )
  }
  return (
    <div class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </div>
  )
}

export function ShopPicker({ value, onChange, allowAll = false }: { value: string; onChange: (shop: string) => void; allowAll?: boolean }) {
  const list = shops.value ?? []
  return (
    <label>
      Shop{' '}
      <select name="shop" value={value} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value)}>
        {allowAll && <option value="">all shops</option>}
        {list.map((s) => (
          <option value={s.name}>{s.name}</option>
        ))}
      </select>
    </label>
  )
}
