// SQLite's write-ahead log, read frame by frame (https://sqlite.org/fileformat2.html#walformat):
// which pages a run wrote, and how often. Pure but for reading the file.
import { closeSync, existsSync, openSync, readSync } from 'node:fs'

export interface WalHeader {
  pageSize: number
  checkpointSequence: number
  salt1: number
  salt2: number
}

export interface WalFrame {
  /** The page this frame holds a version of. */
  page: number
  /** The database's size in pages after this commit, on a transaction's last frame; else 0. */
  commitSize: number
}

export interface Wal {
  header: WalHeader
  /** The frames a reader would use: salts that match the header, checksums that chain, up to the last commit. */
  frames: WalFrame[]
}

const HEADER = 32
const FRAME_HEADER = 24
const MAGIC = 0x377f0682

/** SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing from `s`. */
function checksum(data: Uint8Array, bigEndian: boolean, s: [number, number]): [number, number] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  let [s0, s1] = s
  for (let i = 0; i < data.byteLength; i += 8) {
    s0 = (s0 + view.getUint32(i, !bigEndian) + s1) >>> 0
    s1 = (s1 + view.getUint32(i + 4, !bigEndian) + s0) >>> 0
  }
  return [s0, s1]
}

/** Frames read per call, so a WAL of hundreds of megabytes is never held whole. */
const CHUNK_FRAMES = 256

/** Reads the WAL at `path`; undefined when there is none or it is shorter than its header (empty after a truncation). */
export function readWal(path: string): Wal | undefined {
  if (!existsSync(path)) return undefined
  const fd = openSync(path, 'r')
  try {
    const head = Buffer.alloc(HEADER)
    if (readSync(fd, head, 0, HEADER, 0) < HEADER) return undefined
    const magic = head.readUInt32BE(0)
    if ((magic & ~1) >>> 0 !== MAGIC) throw new Error(`${path}: not a WAL file (magic ${magic.toString(16)})`)
    const bigEndian = (magic & 1) === 1
    const header: WalHeader = {
      pageSize: head.readUInt32BE(8),
      checkpointSequence: head.readUInt32BE(12),
      salt1: head.readUInt32BE(16),
      salt2: head.readUInt32BE(20),
    }
    let sum = checksum(head.subarray(0, 24), bigEndian, [0, 0])
    if (sum[0] !== head.readUInt32BE(24) || sum[1] !== head.readUInt32BE(28)) return { header, frames: [] }
    const frameSize = FRAME_HEADER + header.pageSize
    const chunk = Buffer.alloc(frameSize * CHUNK_FRAMES)
    const frames: WalFrame[] = []
    let committed = 0
    let offset = HEADER
    for (;;) {
      const got = readSync(fd, chunk, 0, chunk.length, offset)
      const whole = Math.floor(got / frameSize)
      for (let i = 0; i < whole; i++) {
        const frame = chunk.subarray(i * frameSize, (i + 1) * frameSize)
        const page = frame.readUInt32BE(0)
        // A frame of an earlier generation of the log (before a restart) has other salts: the log ends there.
        if (page === 0 || frame.readUInt32BE(8) !== header.salt1 || frame.readUInt32BE(12) !== header.salt2)
          return { header, frames: frames.slice(0, committed) }
        sum = checksum(frame.subarray(0, 8), bigEndian, sum)
        sum = checksum(frame.subarray(FRAME_HEADER), bigEndian, sum)
        if (sum[0] !== frame.readUInt32BE(16) || sum[1] !== frame.readUInt32BE(20)) return { header, frames: frames.slice(0, committed) }
        const commitSize = frame.readUInt32BE(4)
        frames.push({ page, commitSize })
        if (commitSize > 0) committed = frames.length
      }
      if (whole < CHUNK_FRAMES) return { header, frames: frames.slice(0, committed) }
      offset += whole * frameSize
    }
  } finally {
    closeSync(fd)
  }
}

/**
 * The frames appended between two readings of one WAL, held open meanwhile by a reader (so it
 * was never reset by a checkpoint, only possibly restarted once, at the first write after
 * `before`, if `before` had been wholly checkpointed: then every frame of `after` is new).
 */
export function framesSince(before: Wal | undefined, after: Wal | undefined): WalFrame[] {
  if (!after) return []
  if (!before || before.header.salt1 !== after.header.salt1 || before.header.salt2 !== after.header.salt2) return after.frames
  return after.frames.slice(before.frames.length)
}

/** Pointer-map pages of a database with auto_vacuum: page 2 and every (usable size / 5 + 1)th after it; they belong to no b-tree. */
export function isPointerMapPage(page: number, usableSize: number): boolean {
  const span = Math.floor(usableSize / 5) + 1
  return page >= 2 && (page - 2) % span === 0
}

export interface BtreePages {
  name: string
  frames: number
  /** Different pages among those frames. */
  distinct_pages: number
  frames_per_webhook: number
  bytes_per_webhook: number
}

export interface PageReport {
  webhooks: number
  /** Transactions committed: frames that end one. */
  commits: number
  frames: number
  frames_per_webhook: number
  bytes_per_webhook: number
  pages_per_commit: number
  btrees: BtreePages[]
}

/**
 * Frames per b-tree. `owner` names the table or index a page belongs to (dbstat); a page it
 * does not know is `(pointer map)` where auto_vacuum keeps one, else `(free or unmapped)`.
 */
export function pagesByBtree(
  frames: readonly WalFrame[],
  owner: ReadonlyMap<number, string>,
  options: { pageSize: number; webhooks: number; autoVacuum: boolean },
): PageReport {
  const { pageSize, webhooks, autoVacuum } = options
  const n = Math.max(1, webhooks)
  const byName = new Map<string, { frames: number; pages: Set<number> }>()
  let commits = 0
  for (const f of frames) {
    if (f.commitSize > 0) commits++
    const name = owner.get(f.page) ?? (autoVacuum && isPointerMapPage(f.page, pageSize) ? '(pointer map)' : '(free or unmapped)')
    let entry = byName.get(name)
    if (!entry) byName.set(name, (entry = { frames: 0, pages: new Set() }))
    entry.frames++
    entry.pages.add(f.page)
  }
  const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places
  return {
    webhooks,
    commits,
    frames: frames.length,
    frames_per_webhook: round(frames.length / n, 2),
    bytes_per_webhook: Math.round((frames.length * pageSize) / n),
    pages_per_commit: commits > 0 ? round(frames.length / commits, 1) : 0,
    btrees: [...byName]
      .map(([name, e]) => ({
        name,
        frames: e.frames,
        distinct_pages: e.pages.size,
        frames_per_webhook: round(e.frames / n, 3),
        bytes_per_webhook: Math.round((e.frames * pageSize) / n),
      }))
      .sort((a, b) => b.frames - a.frames || a.name.localeCompare(b.name)),
  }
}
