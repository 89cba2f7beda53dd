import { signal } from '@preact/signals'
import { api, ApiError, type ShopSummary } from '../api.ts'

/** The shops, loaded once after sign-in (Overview reloads them); every page picks from them. */
export const shops = signal<ShopSummary[] | null>(null)

export async function loadShops(): Promise<ShopSummary[]> {
  const page = await api('GET', '/v3/admin/shops', { query: { limit: 500 } })
  shops.value = page.items
  return page.items
}

/**
 * The shop a page shows when none is asked: the oldest (the list is newest first), which is the
 * shop the service was set up for, rather than whichever was made last.
 */
export function defaultShop(): string {
  return shops.value?.at(-1)?.name ?? ''
}

/** What a field is called on the page: its label from `labels` (by pointer, or the pointer of its list), else its pointer in words. */
export function fieldName(pointer: string, labels: Record<string, string> = {}): string {
  if (pointer === '') return 'the body'
  if (labels[pointer]) return labels[pointer]
  const parent = pointer.replace(/\/[^/]*$/, '')
  const last = pointer.slice(parent.length + 1)
  if (labels[parent] && /^\d+$/.test(last)) return `${labels[parent]}, item ${Number(last) + 1}`
  if (labels[parent]) return `${labels[parent]}, ${last.replace(/~1/g, '/').replace(/~0/g, '~')}`
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~').replace(/_/g, ' '))
    .join(' › ')
}

export function Outcome({ outcome }: { outcome: string }) {
  return <span class={`badge o-${outcome}`}>{outcome}</span>
}

/**
 * A failure to show: the problem's title, detail and field errors (each by its label in `labels`,
 * keyed by pointer), or the error's message. `pointers`: a webhook's errors, named by their JSON
 * pointers as the event inspector names them.
 */
export function ErrorBox({ error, labels, pointers = false }: { error: unknown; labels?: Record<string, string>; pointers?: boolean }) {
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
              <li data-pointer={e.pointer}>
                {pointers ? <code>{e.pointer || '(body)'}</code> : <strong>{fieldName(e.pointer, labels)}</strong>} {e.detail}
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
        {[...list]
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
          .map((s) => (
            <option value={s.name}>{s.name}</option>
          ))}
      </select>
    </label>
  )
}
