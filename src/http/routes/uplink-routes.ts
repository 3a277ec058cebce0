/** `GET /api/v1/uplink/status` (admin): the fleet uplink as `/metrics` shows it, per model (contract 17). */
import type { UplinkView } from '../core/deps.js';
import type { Guard, Router } from '../core/router.js';

export function addUplinkRoutes(router: Router, uplink: UplinkView | undefined, admin: Guard): void {
  router.group({ prefix: '/api/v1/uplink', guard: admin }, (g) => {
    g.get('/status', () => uplink?.status() ?? { engine: 'off' });
  });
}
