import { signal } from '@preact/signals'

/** The events list's query as last shown ("?outcome=rejected…"), for the inspector's way back to it. */
export const lastListQuery = signal('')
