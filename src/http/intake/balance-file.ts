import { isUtf8 } from 'node:buffer'
import { parse } from 'csv-parse/sync'
import { IMPORT_POINTS_MAX } from '../../loyalty/imports.ts'
import type { BalanceLine } from '../../rewards/balance-import.ts'
import { IMPORT_COLUMNS, ImportLineCells, REQUIRED_COLUMNS } from '../../schemas/imports.ts'
import type { FieldError } from '../../domain/webhook.ts'
import { checkValue } from '../validation.ts'
import { END_OF_INSTANTS, parseInstantUs, readInstant } from '../../domain/time.ts'

// A CSV of balances to import (docs/program/imports.md), read and checked whole before anything is
// written: the admin API and the command line read it here. A bad line refuses the file, naming
// its line and column; each line is checked as the webhooks' fields are (the same e-mail rule).

/** Most problems a refused file lists; `count` says how many there were. */
const MAX_PROBLEMS = 100

/**
 * The file's lines, checked: the header names its columns (customer_id, email and points, and
 * optionally expires_at and tier, in any order), then one line per customer. Any bad line refuses
 * the whole file: its problems, each at `/<line>/<column>`, the first 100, and how many in all.
 */
export function readBalanceFile(bytes: Buffer | string, tiers: readonly string[]): { lines: BalanceLine[] } | { problems: FieldError[]; count: number } {
  const problems: FieldError[] = []
  let count = 0
  const refuse = (line: number, column: string, detail: string) => {
    count++
    if (problems.length < MAX_PROBLEMS)
      problems.push({ pointer: `/${line}${column ? `/${column}` : ''}`, detail: `line ${line}${column ? `, ${column}` : ''}: ${detail}` })
  }
  if (typeof bytes !== 'string' && !isUtf8(bytes)) return { problems: [{ pointer: '', detail: 'the file is not UTF-8 text' }], count: 1 }
  const text = typeof bytes === 'string' ? bytes : bytes.toString('utf8')
  let records: { record: string[]; info: { lines: number } }[]
  try {
    records = csvRecords(text)
  } catch (err) {
    const line = (err as { lines?: number }).lines ?? 1
    return { problems: [{ pointer: `/${line}`, detail: `line ${line}: ${(err as Error).message.replace(/^Invalid [^:]*: /, '')}` }], count: 1 }
  }
  const [header, ...rows] = records
  if (!header)
    return { problems: [{ pointer: '/1', detail: `line 1: the header is missing: it names the columns, ${REQUIRED_COLUMNS.join(', ')} at least` }], count: 1 }
  const columns = header.record
  columns.forEach((name, i) => {
    // An empty name (a comma at the end of the header, or two in a row) is named by its place.
    if (name === '')
      refuse(
        header.info.lines,
        '',
        `column ${i + 1} has no name${i === columns.length - 1 ? ': the header ends with a comma' : ''}; name it (${IMPORT_COLUMNS.join(', ')}) or remove it`,
      )
    else if (!(IMPORT_COLUMNS as readonly string[]).includes(name))
      refuse(header.info.lines, name, `is not a column an import takes (${IMPORT_COLUMNS.join(', ')})`)
    else if (columns.indexOf(name) !== i) refuse(header.info.lines, name, 'is named twice')
  })
  for (const name of REQUIRED_COLUMNS) if (!columns.includes(name)) refuse(header.info.lines, name, 'is a column the header must name')
  if (count > 0) return { problems, count }

  const lines: BalanceLine[] = []
  const firstLineOf = new Map<number, number>()
  for (const { record, info } of rows) {
    const at = info.lines
    if (record.length !== columns.length) {
      refuse(at, '', `has ${record.length} cells; the header names ${columns.length} columns`)
      continue
    }
    const cells: Record<string, string> = {}
    columns.forEach((name, i) => {
      if (record[i] !== '' || (REQUIRED_COLUMNS as readonly string[]).includes(name)) cells[name] = record[i]!
    })
    // expires_at's own words first: they say more than the schema's about a date or the span.
    const errors = [...expiresAtProblems(cells.expires_at), ...checkValue(ImportLineCells, cells), ...lineProblems(cells, tiers)]
    if (errors.length > 0) {
      const seen = new Set<string>()
      for (const e of errors) if (!seen.has(e.pointer) && seen.add(e.pointer)) refuse(at, e.pointer.slice(1), e.detail)
      continue
    }
    const customerId = Number(cells.customer_id)
    const points = Number(cells.points)
    const first = firstLineOf.get(customerId)
    if (first !== undefined) {
      refuse(at, 'customer_id', `must not repeat customer ${customerId} of line ${first}: one line per customer`)
      continue
    }
    firstLineOf.set(customerId, at)
    lines.push({ line: at, customerId, email: cells.email!, points, tier: cells.tier ?? null, expiresUs: expiresUsOf(cells.expires_at) })
  }
  return count > 0 ? { problems, count } : { lines }
}

/** What a line's cells break besides their schema (each of a cell the schema took): the id's and points' ranges, the shop's tiers, expires_at's span. */
function lineProblems(cells: Record<string, string>, tiers: readonly string[]): FieldError[] {
  const problems: FieldError[] = []
  const id = cells.customer_id
  if (id !== undefined && /^[1-9][0-9]{0,15}$/.test(id) && !Number.isSafeInteger(Number(id)))
    problems.push({ pointer: '/customer_id', detail: 'must be no larger than 9007199254740991' })
  if (cells.points !== undefined && /^[0-9]+$/.test(cells.points) && Number(cells.points) > IMPORT_POINTS_MAX)
    problems.push({ pointer: '/points', detail: `must be at most ${IMPORT_POINTS_MAX}` })
  if (cells.tier !== undefined && !tiers.includes(cells.tier))
    problems.push({
      pointer: '/tier',
      detail:
        tiers.length === 0
          ? `must name a tier of the shop, which has no tiers (no tier ${cells.tier})`
          : `must be one of the shop's tiers (${tiers.join(', ')})`,
    })
  return problems
}

/**
 * What is wrong with an expires_at cell, if anything: an instant with its offset (a date alone
 * is refused: which day's end, and where?), from EXPIRES_AT_EARLIEST, before END_OF_INSTANTS.
 */
function expiresAtProblems(cell: string | undefined): FieldError[] {
  if (cell === undefined) return []
  const span = `from ${EXPIRES_AT_EARLIEST}, before ${END_OF_INSTANTS}`
  const refuse = (detail: string) => [{ pointer: '/expires_at', detail }]
  if (/^\d{4}-\d{2}-\d{2}$/.test(cell))
    return refuse(`must be an instant with its UTC offset, not a date alone: such as ${cell}T23:59:59+01:00 for the end of that day in UTC+1`)
  const reading = readInstant(cell)
  if (!reading.ok && reading.reason === 'format') return refuse(`must be an ISO 8601 instant with its UTC offset, such as 2027-03-31T23:59:59Z, ${span}`)
  if (!reading.ok && reading.reason === 'date') return refuse(`names no real date and time: it must be an instant ${span}`)
  // Out of the instants' span altogether (a 'range' reading), the year says which side.
  if (reading.ok ? reading.us < EXPIRES_AT_EARLIEST_US : cell < EXPIRES_AT_EARLIEST)
    return refuse(`must be ${span}: an earlier one is a placeholder of an export, not the date a balance expires on (empty: the shop's rule)`)
  if (!reading.ok) return refuse(`must be ${span}: a later one is past what the service keeps (a date before it stands for never)`)
  return []
}

/**
 * The earliest expires_at a file may give. An instant before now imports the line's points and
 * expires them at once; one this old is no expiry date of a balance still held, but a
 * placeholder of an export (0001-01-01, the epoch): refused, as other bad cells are.
 */
export const EXPIRES_AT_EARLIEST = '2000-01-01T00:00:00Z'
const EXPIRES_AT_EARLIEST_US = parseInstantUs(EXPIRES_AT_EARLIEST)!

/** A checked expires_at cell's epoch microseconds; null when empty (NaN when not an instant: the schema refused it). */
const expiresUsOf = (cell: string | undefined): number | null => (cell === undefined ? null : (parseInstantUs(cell) ?? Number.NaN))

/**
 * The file's records with the line each starts on, cells trimmed, empty lines left out. Lines may
 * end in CR LF or LF, mixed (a header saved on Windows, lines appended on Linux): read alike. A
 * file with no quote has one record per line, whose number is its place: parsed without
 * csv-parse's per-record info, which doubled the cost of a million lines. Quoted cells may hold
 * line breaks: such a file is parsed with it, and a record is named by the line it starts on.
 */
function csvRecords(file: string): { record: string[]; info: { lines: number } }[] {
  // csv-parse takes the first line's ending for the whole file: one form for every line.
  const text = file.includes('\r\n') ? file.replace(/\r\n/g, '\n') : file
  const options = { bom: true, trim: true, relax_column_count: true } as const
  if (text.includes('"')) {
    const parsed = parse(text, { ...options, skip_empty_lines: true, info: true, raw: true }) as unknown as {
      record: string[]
      raw: string
      info: { lines: number }
    }[]
    // `lines` is the line a record ends on: less the line breaks inside it (its raw text holds the
    // empty lines skipped before it, and the break that ends it), the line it starts on.
    return parsed.map(({ record, raw, info }) => {
      const inside =
        raw
          .replace(/^(?:[ \t]*\n)+/, '')
          .replace(/\n$/, '')
          .split('\n').length - 1
      return { record, info: { lines: info.lines - inside } }
    })
  }
  const rows = parse(text, { ...options, skip_empty_lines: false }) as string[][]
  const out: { record: string[]; info: { lines: number } }[] = []
  rows.forEach((record, i) => {
    if (record.length === 1 && record[0] === '') return
    out.push({ record, info: { lines: i + 1 } })
  })
  return out
}
