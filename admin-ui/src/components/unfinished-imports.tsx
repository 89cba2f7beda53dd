import { useEffect, useState } from 'preact/hooks'
import { api, type ImportRuns } from '../api.ts'

// The shop's points imports started and not finished (GET /v3/admin/shops/{shop}/points/imports):
// killed midway, or stopped by an outage, each with how far it got and what finishes it. Nothing
// is shown while there are none, or when the list cannot be read (the page's own answer says why).

export function UnfinishedImports({ shop }: { shop: string }) {
  const [runs, setRuns] = useState<ImportRuns['unfinished']>([])
  useEffect(() => {
    setRuns([])
    if (!shop) return
    api('GET', '/v3/admin/shops/{shop}/points/imports', { params: { shop } })
      .then((r) => setRuns(r.unfinished))
      .catch(() => setRuns([]))
  }, [shop])
  if (runs.length === 0) return null
  return (
    <div class="notice unfinished-imports">
      <strong>Unfinished points imports</strong>
      <ul>
        {runs.map((r) => (
          <li data-import={r.id}>
            Import {r.id}, started {r.started_at} by {r.started_by}: {r.lines_done} of {r.lines_total} lines done (last at {r.updated_at}), file SHA-256{' '}
            <span class="mono">{r.file_sha256.slice(0, 12)}…</span>: <strong>{r.to_finish}</strong>.
          </li>
        ))}
      </ul>
    </div>
  )
}
