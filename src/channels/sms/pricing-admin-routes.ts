import type { FastifyInstance } from 'fastify';
import type { PriceBook, PriceTable } from '../../billing/price-book.js';
import type { PricingStore } from '../../billing/pricing-store.js';
import { coreConfigSchema } from '../../config/schema.js';
import { ok } from '../../http/envelope.js';
import { audit } from '../../admin/audit.js';

export interface PricingAdminDeps {
  prices: PriceBook;
  store: PricingStore;
}

// The config file's schema for the table, without the defaults and description that only make sense there.
const { default: _default, description: _description, ...pricingSchema } = coreConfigSchema.properties.pricing;
const bodySchema = { ...pricingSchema, required: ['entries'] };

/** GET/PUT /admin/pricing: the SMS price table (same shape as `pricing` in the config file). */
export function registerPricingRoutes(app: FastifyInstance, deps: PricingAdminDeps): void {
  app.get('/admin/pricing', async (req) => ok(req, 'PRICING', deps.prices.table()));
  app.put<{ Body: PriceTable }>(
    '/admin/pricing',
    { schema: { body: bodySchema } },
    async (req) => {
      await deps.store.save({ defaultPrice: req.body.defaultPrice ?? null, entries: req.body.entries });
      const table = deps.prices.table();
      audit(req, 'pricing.replaced', { defaultPrice: table.defaultPrice, entries: table.entries.length }, 'price table replaced');
      return ok(req, 'PRICING_UPDATED', table);
    },
  );
}
