import cluster from 'node:cluster'
import { AggregatorRegistry, type Registry } from 'prom-client'

// With WORKERS=N, /metrics is answered by whichever worker takes the request: each would show its
// own counts, and a scrape would jump from one to another. So a worker asks the primary, which
// collects every worker's registry (prom-client's cluster aggregation) and answers the sum
// (the gauges that every process samples alike, such as the database size, take the largest).

const REQUEST = 'shop-intake:metrics'
const ANSWER = 'shop-intake:metrics-answer'
const TIMEOUT_MS = 5000

interface Answer {
  type: typeof ANSWER
  id: number
  text?: string
  error?: string
}

/** In the primary: answers the workers' requests for the metrics of all of them. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry()
  cluster.on('message', (worker, message: { type?: string; id: number }) => {
    if (message?.type !== REQUEST) return
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: ANSWER, id: message.id, text } satisfies Answer),
      (err: Error) => worker.isConnected() && worker.send({ type: ANSWER, id: message.id, error: err.message } satisfies Answer),
    )
  })
}

/** In a worker: offers `registry` to the primary's aggregation; returns what /metrics answers, the sum over every worker. */
export function clusterMetricsOf(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry])
  // Constructing one is what makes prom-client answer the primary's requests in this worker.
  new AggregatorRegistry()
  let next = 0
  const waiting = new Map<number, (answer: Answer) => void>()
  process.on('message', (message: Answer) => {
    if (message?.type === ANSWER) waiting.get(message.id)?.(message)
  })
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++
      const timer = setTimeout(() => {
        waiting.delete(id)
        reject(new Error("the primary did not answer with the workers' metrics"))
      }, TIMEOUT_MS)
      waiting.set(id, (answer) => {
        clearTimeout(timer)
        waiting.delete(id)
        if (answer.text !== undefined) resolve(answer.text)
        else reject(new Error(answer.error ?? 'no metrics'))
      })
      process.send!({ type: REQUEST, id })
    })
}
