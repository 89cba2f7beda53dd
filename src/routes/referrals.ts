import type { FastifyReply } from 'fastify'
import { problem, sendProblem, submit } from '../http/intake/index.ts'
import { randomCodeBody } from '../keys/reward-codes.ts'
import { normalizeEmail } from '../loyalty/referrals.ts'
import type { Services } from '../services.ts'

// A friend's claim of a referral code (docs/program/referrals.md), handed to the writer as a
// command: the referral is decided there, under the locks of the e-mail and the referrer, from
// the friend's orders stored before it. The e-mail crosses to the writer only to find those
// orders; what is kept is its keyed hash.

/** Answers a friend's claim of `code` with `email` in the key's shop. */
export async function claimReferral(services: Services, reply: FastifyReply, shopId: number, code: string, email: string) {
  const referrer = services.referralKeys.referrerOf(code)
  if (referrer === null || referrer.shopId !== shopId) return sendProblem(reply, problem('not-found', 'no customer of this shop has this referral code'))
  const normalized = normalizeEmail(email)
  if (normalized === null) {
    return sendProblem(
      reply,
      problem('invalid-body', 'the body has 1 invalid field', { error_count: 1, errors: [{ pointer: '/email', detail: 'must be an e-mail address' }] }),
    )
  }
  const outcome = await submit(
    services,
    {
      command: 'referral-claim',
      shopId,
      customerId: referrer.customerId,
      referralId: services.newId(),
      emailHash: services.referralKeys.hashEmail(shopId, normalized),
      emails: [...new Set([email.trim().toLowerCase(), normalized])],
      random: randomCodeBody(),
      atUs: services.clock.nowUs(),
    },
    'referral claim',
  )
  if (outcome.status === 'referral-refused') {
    return sendProblem(
      reply,
      problem('not-found', outcome.reason === 'no-program' ? 'this shop offers no referrals' : 'no customer of this shop has this referral code'),
    )
  }
  if (outcome.status !== 'referral-claimed') throw new Error(`a referral claim answered ${outcome.status}`)
  const { referral } = outcome
  // Refused: the referrer's own e-mail, or a friend who had ordered before the claim (docs/integrate/storefront.md
  // says so). Not told which: the console is. Another referrer's claim of the friend is no refusal.
  if (referral.status === 'refused') return sendProblem(reply, refused())
  return reply.code(outcome.replayed ? 200 : 201).send({
    referral_id: referral.referral_id,
    status: referral.status,
    reward_code: referral.reward_code,
    pending_points: referral.pending_points,
  })
}

const refused = () => problem('referral-refused', 'this e-mail cannot be referred with this code')
