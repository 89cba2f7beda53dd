import type { Clock } from '../clock.ts'
import { Command, InvalidArgumentError, Option } from 'commander'
import { formatInstant } from '../domain/time.ts'
import { generateAdminKey } from '../keys/admin-key.ts'
import { hashKey, keyHint } from '../keys/api-key.ts'
import { ADMIN_ROLES, findAdmin, insertAdmin, listAdmins, revokeAdmin, type AdminRole } from '../repos/admin-repo.ts'
import { auditCommandLine } from './audit.ts'
import { withBackend } from './backend.ts'
import { printTable } from './keys.ts'

// Operators of the console (docs/operate/admin-api.md): each has a name, recorded with every
// change they make, and an admin key, shown once.

function operatorName(value: string): string {
  // eslint-disable-next-line no-control-regex -- a name may hold no control character: that is the rule
  if (!/^[^\u0000-\u001f\u007f]{1,100}$/u.test(value) || value.trim() !== value) {
    throw new InvalidArgumentError('a name is 1 to 100 printable characters, without leading or trailing spaces')
  }
  return value
}

function adminId(value: string): number {
  if (!/^[1-9]\d{0,9}$/.test(value)) throw new InvalidArgumentError('an operator id is a whole number from 1 to 9999999999, as admins list shows it')
  return Number(value)
}

export function adminsCommand(clock: Clock): Command {
  const admins = new Command('admins').description("create, list and revoke the console's operators and their admin keys")

  admins
    .command('create')
    .description('create an operator and an admin key; the key is printed once, on the last line')
    .requiredOption('--name <name>', "the operator's name, recorded with every change they make", operatorName)
    .addOption(new Option('--role <role>', 'operator: may look and change; viewer: may look only').choices(ADMIN_ROLES).default('operator'))
    .action((options: { name: string; role: AdminRole }) =>
      withBackend(async ({ db }) => {
        const key = generateAdminKey()
        const id = await insertAdmin(db, options.name, hashKey(key), keyHint(key), clock.nowUs(), options.role)
        await auditCommandLine(
          db,
          { action: 'admin.create', shopId: null, target: String(id), detail: { name: options.name, role: options.role } },
          clock.nowUs(),
        )
        const role = options.role === 'viewer' ? 'a viewer: may look, not change' : 'an operator: may look and change'
        console.log(`created operator ${id} (${options.name}), ${role}; store the admin key now, it is not shown again:`)
        console.log(key)
      }),
    )

  admins
    .command('list')
    .description('list operators: id, name, role, masked key hint, created, revoked')
    .action(() =>
      withBackend(async ({ db }) => {
        const rows = await listAdmins(db)
        printTable(
          rows.map((r) => ({
            id: String(r.id),
            name: r.name,
            role: r.role,
            hint: r.hint,
            created: formatInstant(r.created_at) ?? '',
            revoked: formatInstant(r.revoked_at) ?? 'no',
          })),
          ['id', 'name', 'role', 'hint', 'created', 'revoked'],
        )
      }),
    )

  admins
    .command('revoke')
    .description("revoke an operator's key and end their sessions, at once")
    .argument('<id>', 'the operator id, as admins list shows it', adminId)
    .action((id: number) =>
      withBackend(async ({ db }) => {
        const done = await revokeAdmin(db, id, clock.nowUs())
        if (done.result === 'unknown') throw new Error(`no operator with id ${id}; admins list shows the ids`)
        if (done.result === 'already') throw new Error(`operator ${id} was already revoked, at ${formatInstant(done.revokedAt)}`)
        await auditCommandLine(
          db,
          { action: 'admin.revoke', shopId: null, target: String(id), detail: { name: (await findAdmin(db, id))!.name } },
          clock.nowUs(),
        )
        console.log(`revoked operator ${id}`)
      }),
    )
  return admins
}
