/**
 * @module The foreign-content plug-in's face: the `foreignContent` option group resolved once per
 * guard, the book of recent prompts (../guard/fingerprint-book.ts), each answer's watch
 * (../verify/content-check.ts) and the second opinion before content alone withholds
 * (../verify/second-opinion.ts, its request ../guard/recall.ts).
 */

import type {
  AnswerContent,
  ContentBook,
  ContentPlugin,
  ForeignContentOptions,
  PrintedPrompt,
} from '../../core'
import { ContentCheck, ContentHold } from './content-check'
import { resolveForeignContent } from './content-settings'
import { type BookPrompt, FingerprintBook } from './fingerprint-book'
import { lastQuestion, RecallBudget, type RecallHost, recallFor } from './recall'
import { secondOpinion } from './second-opinion'

/**
 * Foreign content: on unless the `content` option is `false`.
 *
 * @example
 * new Guard(options, { content: foreignContentPlugin })
 */
export const foreignContentPlugin: ContentPlugin = {
  create(options, host): (ContentBook & { book: FingerprintBook }) | undefined {
    const settings = resolveForeignContent(options as ForeignContentOptions | false | undefined)
    if (!settings) return undefined
    const book = new FingerprintBook(settings, () => host.key(), host.now)
    const recall = settings.recall
    const budget = recall ? new RecallBudget(recall.perSourcePerHour, host.now) : undefined
    return {
      book,
      ready: () => book.ready(),
      heldBytes: () => book.table.secondGenerationBytes,
      print(prompt) {
        const { model, tenant, texts, waitUntil, memo, said } = prompt
        const printed = book.print({ model, tenant, waitUntil }, { texts, memo, said })
        return () => printedPrompt(printed())
      },
      recall(request) {
        if (!recall || !budget) return undefined
        const host: RecallHost = {
          budget,
          model: request.model,
          requestId: request.requestId,
          question: lastQuestion(request.inputs),
          recalled: (said, given) => book.recalled(said, given),
          ask: request.ask,
        }
        return recallFor(host, recall)
      },
    }
  },
}

/** A printed prompt as the core asks for it: one watch per answer, and the store's gap. */
function printedPrompt(printed: BookPrompt): PrintedPrompt {
  return {
    gap: () => printed.gap(),
    answer: async () => answerContent(new ContentHold(await printed.watch()), printed),
  }
}

/** One answer's watch: fed by the core, asked for its evidence, its second opinion and its check. */
function answerContent(hold: ContentHold, printed: BookPrompt): AnswerContent {
  return {
    push: (channel, text) => hold.push(channel, text),
    end: () => hold.end(),
    evidence: () => hold.evidence(),
    confirmed: (recall) => secondOpinion({ recall }, hold),
    check: (options) =>
      new ContentCheck(hold, {
        holdBack: options.holdBack,
        barrier: options.barrier,
        ask: { recall: options.recall },
        onEvidence: options.onEvidence,
      }),
    learn: () => printed.learn(hold.watch),
  }
}
