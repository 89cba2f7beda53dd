import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { countOf, type Stats } from '../api.ts'
import { headroom, OUTCOME_COLOURS } from '../format.ts'

/** Webhooks per minute, one line per outcome (uPlot). */
export function OutcomeChart({ stats, height = 220 }: { stats: Stats; height?: number }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = box.current
    if (!el) return
    const xs = stats.minutes.map((m) => Date.parse(m.minute) / 1000)
    const data: uPlot.AlignedData = [xs, ...stats.outcomes.map((o) => stats.minutes.map((m) => countOf(m, o)))]
    // Off the chart (idx null), the legend shows each outcome's total over the window rather than uPlot's "--".
    const total = (values: number[]) => (_u: uPlot, v: number | null, _s: number, idx: number | null) =>
      idx == null ? String(values.reduce((a, b) => a + b, 0)) : v == null ? '—' : String(v)
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, headroom(max)] } },
        axes: [
          // Hours and minutes in UTC, as every time on these pages.
          { values: (_u, splits) => splits.map((s) => new Date(s * 1000).toISOString().slice(11, 16)) },
          { label: 'per minute', size: 50 },
        ],
        series: [
          { label: 'minute (UTC)', value: (_u, v, _s, idx) => (idx == null ? 'in all' : v == null ? '—' : new Date(v * 1000).toISOString().slice(11, 16)) },
          ...stats.outcomes.map((o, i) => ({
            label: o,
            stroke: OUTCOME_COLOURS[o] ?? '#333',
            width: 2,
            points: { show: false },
            value: total(data[i + 1] as number[]),
          })),
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
  }, [stats, height])
  return <div class="chart" ref={box} />
}
