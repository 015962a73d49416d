/** Routing: rules, candidates, failover order, live route switch. */
export { Router, type RouterOptions, type RouteSwitchEvent, type SwitchResult } from './router.js';
export { RouteRule, type RouteChoice, type RouteRuleView } from './route-rule.js';
export { RoutingError, type RoutingErrorCode } from './routing-error.js';
export { PrefixFilter, AccountFilter, SenderFilter, PriorityFilter, filtersFromMatch, type RouteFilter, type RouteInput } from './filters.js';
