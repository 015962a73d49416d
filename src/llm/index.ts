export {
  assistantMessage,
  type ChatCallOptions,
  type ChatCompleteOptions,
  type ChatEvent,
  type ChatFinishReason,
  type ChatMessage,
  type ChatModel,
  type ChatRequest,
  type ChatResult,
  type ChatTimings,
  type ChatTool,
  type ChatToolCall,
  type ChatToolCallMessage,
  type ChatToolChoice,
  type ChatUsage,
} from './chat-model.js';
export { OpenAiChatModel, type OpenAiChatModelOptions } from './openai-chat-model.js';
export { SentenceChunker, type SentenceChunkerOptions } from './sentence-chunker.js';
export {
  LlmAbortedError,
  LlmAuthError,
  LlmBadRequestError,
  LlmBadResponseError,
  LlmError,
  LlmRateLimitedError,
  LlmTimeoutError,
  LlmUnavailableError,
  type LlmErrorCode,
  type LlmErrorOptions,
} from './errors.js';
export {
  classifyLlmFailure,
  llmErrorRule,
  OPENAI_CHAT_ERRORS,
  sanitiseLlmDetail,
  type LlmErrorRule,
  type LlmFailure,
  type LlmFailureAction,
  type LlmFailureKind,
} from './llm-errors-table.js';
