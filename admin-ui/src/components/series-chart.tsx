import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { headroom } from '../format.ts'

/** One line of a chart: its label, its colour, a value per date. */
export interface Line {
  label: string
  colour: string
  values: number[]
}

/** Figures per day of the shop's calendar, one line each (uPlot): the dates are the shop's days, drawn as days, not instants. */
export function SeriesChart({ name, dates, lines, height = 200 }: { name: string; dates: string[]; lines: Line[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = box.current
    if (!el) return
    // Each day at its noon in UTC, labelled by its date as the service gave it: no zone moves it.
    const xs = dates.map((d) => Date.parse(`${d}T12:00:00Z`) / 1000)
    const data: uPlot.AlignedData = [xs, ...lines.map((l) => l.values)]
    const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10)
    // Off the chart (idx null), the legend shows each line's total over the range rather than uPlot's "--".
    const total = (values: number[]) => (_u: uPlot, v: number | null, _s: number, idx: number | null) =>
      idx == null ? String(Math.round(values.reduce((a, b) => a + b, 0) * 100) / 100) : v == null ? '—' : String(v)
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height,
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), headroom(max)] } },
        // Month and day under each tick, a tick at least 60 px apart (the legend names the year).
        axes: [{ space: 60, values: (_u, splits) => splits.map((s) => day(s).slice(5)) }, { size: 60 }],
        series: [
          { label: 'day', value: (_u, v, _s, idx) => (idx == null ? 'in all' : v == null ? '—' : day(v)) },
          ...lines.map((l, i) => ({ label: l.label, stroke: l.colour, width: 2, points: { show: dates.length <= 31 }, value: total(data[i + 1] as number[]) })),
        ],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
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
    el.dataset.points = String(dates.length)
    const resize = () => plot.setSize({ width: Math.max(320, el.clientWidth), height })
    addEventListener('resize', resize)
    return () => {
      removeEventListener('resize', resize)
      plot.destroy()
    }
  }, [dates, lines, height])
  return <div class="chart" data-chart={name} ref={box} />
}
