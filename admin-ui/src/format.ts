import type { Outcome } from './api.ts'

/** An instant as "2026-11-23 04:50:12Z": exact, sortable and the same for every operator. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime())
    ? iso
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
}

export function percent(part: number, whole: number): string {
  return whole === 0 ? '—' : `${((100 * part) / whole).toFixed(part === 0 || part === whole ? 0 : 1)}%`
}

export const OUTCOMES: readonly Outcome[] = ['applied', 'duplicate', 'stale', 'rejected']
export const TOPICS = ['customer/hook_created', 'customer/hook_deleted', 'order/hook_created'] as const

/** The colour of an outcome, in the chart and the badges (also in style.css). */
export const OUTCOME_COLOURS: Record<string, string> = {
  applied: '#2e7d32',
  duplicate: '#607d8b',
  stale: '#b8860b',
  rejected: '#c62828',
  failed: '#6a1b9a',
}

/**
 * The top of a chart's scale for values up to `max`: a round number a step above it, so that the
 * highest point is drawn below the top gridline and its label, not on the chart's edge.
 */
export function headroom(max: number): number {
  if (!(max > 0)) return 1
  const step = 10 ** Math.floor(Math.log10(max))
  const top = Math.ceil((max * 1.1) / (step / 2)) * (step / 2)
  return top > max ? top : top + step / 2
}
