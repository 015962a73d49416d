import type { FastifyInstance } from 'fastify';
import { appRoutes } from './app-routes.js';
import { deviceRoutes } from './device-routes.js';
import { topicRoutes } from './topic-routes.js';
import type { PushService } from './push-service.js';
import type { IdempotencyStore } from '../../http/idempotency.js';
import type { PushSends } from './push-sends.js';
import { sendRoutes } from './send-routes.js';

/** Mobile push's REST API under /v1/push: apps, devices, topics and sends. */
export async function pushRoutes(app: FastifyInstance, deps: { service: PushService; sends: PushSends; idempotency: IdempotencyStore }): Promise<void> {
  await appRoutes(app, deps);
  await deviceRoutes(app, deps);
  await topicRoutes(app, deps);
  await sendRoutes(app, deps);
}
