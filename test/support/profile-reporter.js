// A node:test reporter that writes one line of JSON per test file when the file ends: its path,
// its wall time in seconds and whether it passed (scripts/run-tests.js reads them for its profile
// and for the order of the next run).
export default async function* fileTimes(source) {
  for await (const event of source) {
    if (event.type !== 'test:complete' || event.data.nesting !== 0 || event.data.name !== event.data.file) continue
    const { file, details } = event.data
    yield `${JSON.stringify({ file, seconds: details.duration_ms / 1000, passed: details.passed })}\n`
  }
}
