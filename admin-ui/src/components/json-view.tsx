import type { ComponentChildren } from 'preact'
import type { FieldError } from '../api.ts'

// A JSON body pretty-printed, with the values the errors point at highlighted. An error whose
// pointer names nothing in the body (a required field that is missing) marks the nearest value
// that is there: the object the field is missing from.

const escapeToken = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
const unescapeToken = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~')

/** The pointer of the deepest value of `root` on the way to `pointer` ("" for the whole body). */
export function existingPointer(root: unknown, pointer: string): string {
  if (pointer === '' || !pointer.startsWith('/')) return ''
  let node: unknown = root
  let found = ''
  for (const raw of pointer.slice(1).split('/')) {
    const token = unescapeToken(raw)
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, token)) break
    node = (node as Record<string, unknown>)[token]
    found += `/${escapeToken(token)}`
  }
  return found
}

/** Marks by the pointer they sit on: each error at the value it names, or its nearest ancestor. */
export function marksOf(root: unknown, errors: FieldError[]): Map<string, FieldError[]> {
  const marks = new Map<string, FieldError[]>()
  for (const e of errors) {
    const at = existingPointer(root, e.pointer)
    marks.set(at, [...(marks.get(at) ?? []), e])
  }
  return marks
}

const pad = (depth: number) => '  '.repeat(depth)

function render(value: unknown, pointer: string, depth: number, marks: Map<string, FieldError[]>): ComponentChildren {
  let inner: ComponentChildren
  if (Array.isArray(value)) {
    inner =
      value.length === 0
        ? '[]'
        : [
            '[\n',
            ...value.map((item, i) => [pad(depth + 1), render(item, `${pointer}/${i}`, depth + 1, marks), i < value.length - 1 ? ',\n' : '\n']),
            pad(depth),
            ']',
          ]
  } else if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
    inner =
      entries.length === 0
        ? '{}'
        : [
            '{\n',
            ...entries.map(([k, v], i) => [
              pad(depth + 1),
              <span class="j-key">{JSON.stringify(k)}</span>,
              ': ',
              render(v, `${pointer}/${escapeToken(k)}`, depth + 1, marks),
              i < entries.length - 1 ? ',\n' : '\n',
            ]),
            pad(depth),
            '}',
          ]
  } else {
    inner = <span class={`j-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
  }
  const errors = marks.get(pointer)
  if (!errors) return inner
  return (
    <mark class="j-error" data-pointer={pointer} title={errors.map((e) => `${e.pointer || '(body)'}: ${e.detail}`).join('\n')}>
      {inner}
    </mark>
  )
}

export function JsonView({ text, errors = [] }: { text: string; errors?: FieldError[] }) {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    // Not JSON (a malformed-json rejection): the text as it came, all of it marked if it was refused.
    return <pre class="json">{errors.length > 0 ? <mark class="j-error" data-pointer="">{text}</mark> : text}</pre>
  }
  return <pre class="json">{render(parsed, '', 0, marksOf(parsed, errors))}</pre>
}
