/** @module docs/ecosystem.md, "Refusals in a streamed response" (test/ecosystem/ai-sdk.test.ts). */
import { APICallError, streamText } from 'ai'
import { GuardError } from 'workers-ai-guard'
import { asAiBinding } from 'workers-ai-guard/adapters'
import { createWorkersAI } from 'workers-ai-provider'

const workersai = createWorkersAI({ binding: asAiBinding(guard.wrap(env.AI, { tenant: user.id })) })

/** The streaming form: a refusal has to reach the client as an error part, not as silence. */
export function streamed(): Response {
  // #region ai-sdk-stream
  const result = streamText({
    model: workersai('@cf/zai-org/glm-5.3'),
    prompt,
    onError: ({ error }) => console.warn('answer stopped', error), // streamText never throws
  })
  // Not toTextStreamResponse(): it sends text parts only, so a refusal is a 200 with an empty body.
  return result.toUIMessageStreamResponse({
    onError: (error) => {
      const cause = APICallError.isInstance(error) ? error.cause : error
      return cause instanceof GuardError ? `${cause.code}: ${cause.message}` : 'The answer failed.'
    },
  })
  // #endregion
}
