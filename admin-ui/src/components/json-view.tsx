import type { ComponentChildren } from 'preact'
import type { FieldError } from '../api.ts'
import { escapeToken, marksOf } from '../json-pointer.ts'

// A JSON body pretty-printed, with the values the errors point at highlighted (json-pointer.ts
// says where an error that names a missing field is shown).

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
    return (
      <pre class="json">
        {errors.length > 0 ? (
          <mark class="j-error" data-pointer="">
            {text}
          </mark>
        ) : (
          text
        )}
      </pre>
    )
  }
  return <pre class="json">{render(parsed, '', 0, marksOf(parsed, errors))}</pre>
}
