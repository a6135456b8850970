/**
 * @module Leak alerts: signed webhooks (Slack-compatible or JSON) on quarantined incidents, retried in
 * the background and rate-limited per isolate (docs/alerts.md).
 */

export {
  DEFAULT_TOLERANCE_SECONDS,
  deriveTenantSecret,
  SIGNATURE_HEADER,
  type SignatureCheck,
  signWebhook,
  type VerifySignatureOptions,
  verifySignature,
  webhookKey,
} from '../../core'
export {
  type AlertConfig,
  type AlertDestination,
  type AlertSettings,
  parseAlertConfig,
} from './alert-config'
export { type Admission, AlertLimiter, type AlertLimiterOptions } from './alert-limiter'
export {
  ALERT_SCHEMA_VERSION,
  type Alert,
  type AlertDocument,
  type AlertFigures,
  type AlertFormat,
  alertFromVerdict,
  incidentUrl,
  LEAK_REASONS,
  type OperatorAlertDocument,
  operatorDocument,
  renderAlert,
  type SlackMessage,
  slackMessage,
  slackPlain,
  type TenantAlertDocument,
  tenantDocument,
} from './alert-payload'
export { type AlertDelivery, Alerter, type AlerterDeps, type AlertFailure } from './alerter'
export {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  type DeliveryDeps,
  type DeliveryResult,
  deliverWebhook,
  type RetryPolicy,
  retryAfterMs,
  type WebhookDelivery,
} from './webhook-delivery'
