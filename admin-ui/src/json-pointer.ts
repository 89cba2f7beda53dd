// Where an error's JSON pointer (RFC 6901) lands in a parsed body. A pointer that names nothing
// there (a required field that is missing) lands on the nearest value that is: the object the
// field is missing from.

export const escapeToken = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
const unescapeToken = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~')

/** The pointer of the deepest value of `root` on the way to `pointer` ("" for the whole body). */
export function existingPointer(root: unknown, pointer: string): string {
  if (pointer === '' || !pointer.startsWith('/')) return ''
  let node: unknown = root
  let found = ''
  for (const raw of pointer.slice(1).split('/')) {
    const token = unescapeToken(raw)
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, token)) break
    if (Array.isArray(node) && !/^(0|[1-9][0-9]*)$/.test(token)) break
    node = (node as Record<string, unknown>)[token]
    found += `/${escapeToken(token)}`
  }
  return found
}

/** An error of a rejected webhook, as its 422 problem lists it. */
export interface PointedError {
  pointer: string
  detail: string
}

/** The errors by the pointer they are shown at: each at the value it names, or its nearest ancestor. */
export function marksOf<E extends PointedError>(root: unknown, errors: readonly E[]): Map<string, E[]> {
  const marks = new Map<string, E[]>()
  for (const e of errors) {
    const at = existingPointer(root, e.pointer)
    marks.set(at, [...(marks.get(at) ?? []), e])
  }
  return marks
}
