import assert from 'node:assert/strict'
import { test } from 'node:test'
import { friendOf, membersOf, type Links } from './referral-friend.ts'

// Who a friend is, from the links the webhooks made (src/loyalty/referral-friend.ts).

const links = (pairs: [string, string][]): Links => ({
  holdersOf: (hash) => pairs.filter(([h]) => h === hash).map(([, holder]) => holder),
  hashesOf: (holder) => pairs.filter(([, x]) => x === holder).map(([h]) => h),
})

test('given the e-mail’s customers, then their other e-mails and the orders of each are the friend’s; a customer of another e-mail only is not', () => {
  const given = links([
    ['f', 'c:5'], // customer 5 was given the friend's e-mail (before or after the claim)
    ['a', 'c:5'], // and had another
    ['a', 'o:300'], // a guest order under that other e-mail
    ['f', 'o:400'],
    ['a', 'c:9'], // another customer given 5's old e-mail: not the friend
    ['z', 'c:9'],
    ['z', 'o:900'],
  ])
  const friend = friendOf('f', given, (id) => (id === 5 ? [301] : id === 9 ? [901] : []))
  assert.deepEqual(friend, { customers: [5], emails: ['a', 'f'], orders: [300, 301, 400] })
  assert.deepEqual(membersOf(friend), ['e:a', 'e:f', 'c:5', 'o:300', 'o:301', 'o:400'])
})

test('given links in any order, then the same friend', () => {
  const pairs: [string, string][] = [
    ['f', 'c:5'],
    ['a', 'c:5'],
    ['a', 'o:300'],
    ['f', 'o:400'],
  ]
  const ordersOf = () => [301]
  assert.deepEqual(friendOf('f', links([...pairs].reverse()), ordersOf), friendOf('f', links(pairs), ordersOf))
})

test('given no link, then the e-mail alone', () => {
  assert.deepEqual(
    friendOf('f', links([]), () => []),
    { customers: [], emails: ['f'], orders: [] },
  )
})
