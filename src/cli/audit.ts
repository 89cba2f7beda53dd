import { userInfo } from 'node:os'
import type { Kysely } from 'kysely'
import { recordAudit, type AuditEntry } from '../repos/admin-repo.ts'
import type { Tables } from '../db/tables.ts'

// The command line's changes go to the audit log as the console's do, under "command line" and
// the OS user who ran it (admin id 0: no operator's key was used).

function osUser(): string {
  try {
    return userInfo().username
  } catch {
    // A uid without a passwd entry (some containers).
    return process.env.USER ?? `uid ${process.getuid?.() ?? '?'}`
  }
}

/** The name the command line's changes are recorded under: `command line (<OS user>)`. */
export const commandLineName = () => `command line (${osUser()})`

/** Records a change the command line made at `nowUs`. */
export function auditCommandLine(db: Kysely<Tables>, entry: AuditEntry, nowUs: number): Promise<void> {
  return recordAudit(db, { id: 0, name: commandLineName() }, entry, nowUs)
}
