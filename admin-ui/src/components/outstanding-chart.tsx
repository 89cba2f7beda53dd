import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { headroom } from '../format.ts'
import type { PointsReport } from '../api.ts'

/** Points outstanding at each bucket's end, and of them available (uPlot, drawn as the overview's chart). */
export function OutstandingChart({ report, height = 220 }: { report: PointsReport; height?: number }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = box.current
    if (!el) return
    // Each bucket at the end of its last day: the shop's day, drawn as its date (the instants are UTC's only to place it).
    const xs = report.buckets.map((b) => Date.parse(`${b.end}T23:59:59Z`) / 1000)
    const data: uPlot.AlignedData = [xs, report.buckets.map((b) => b.outstanding), report.buckets.map((b) => b.available)]
    const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10)
    // Off the chart (idx null), the legend shows the last bucket's values rather than uPlot's "--".
    const last = report.buckets.length - 1
    const latest = (values: number[]) => (_u: uPlot, v: number | null, _s: number, idx: number | null) =>
      idx == null ? (last < 0 ? '—' : String(values[last])) : v == null ? '—' : String(v)
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height,
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), headroom(max)] } },
        axes: [{ values: (_u, splits) => splits.map(day) }, { label: 'points', size: 70 }],
        series: [
          { label: 'end of', value: (_u, v, _s, idx) => (idx == null ? (last < 0 ? '—' : `${day(xs[last]!)}, the latest`) : v == null ? '—' : day(v)) },
          { label: 'outstanding', stroke: '#1f5fbf', width: 2, points: { show: report.buckets.length < 60 }, value: latest(data[1] as number[]) },
          { label: 'available', stroke: '#2e8540', width: 1, dash: [4, 4], points: { show: false }, value: latest(data[2] as number[]) },
        ],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        // The scale's top, for the tests: above the highest point, never at it.
        hooks: {
          setScale: [
            (u, key) => {
              if (key === 'y') el.dataset.yMax = String(u.scales.y!.max)
            },
          ],
        },
      },
      data,
      el,
    )
    const resize = () => plot.setSize({ width: Math.max(320, el.clientWidth), height })
    addEventListener('resize', resize)
    return () => {
      removeEventListener('resize', resize)
      plot.destroy()
    }
  }, [report, height])
  return <div class="chart" data-chart="outstanding" ref={box} />
}
