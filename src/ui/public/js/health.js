// The service's health under the top bar: while /healthz says "degraded" (a model read-only or closed,
// rules failing for a worker fault), a banner names each reason, as /healthz does. Polled while signed in.
import { h, mount } from './core/dom.js';
import { getToken } from './core/api.js';

const POLL_MS = 10_000;
let timer = null;

async function check(banner) {
  let data;
  try {
    const res = await fetch('/healthz', { headers: { Authorization: `Bearer ${getToken()}` }, cache: 'no-store' });
    data = (await res.json()).data;
  } catch {
    return; // The gateway is unreachable: the next management call says so.
  }
  const reasons = data && data.status === 'degraded' && Array.isArray(data.reasons) ? data.reasons : [];
  banner.hidden = reasons.length === 0;
  if (reasons.length === 0) {
    mount(banner);
    return;
  }
  const list = reasons.length === 1 ? h('span', { text: reasons[0] }) : h('ul', {}, ...reasons.map((r) => h('li', { text: r })));
  mount(banner, h('strong', { text: 'Degraded: ' }), list);
}

export function watchHealth() {
  const banner = document.getElementById('health');
  stopHealth();
  check(banner);
  timer = setInterval(() => check(banner), POLL_MS);
}

export function stopHealth() {
  if (timer !== null) clearInterval(timer);
  timer = null;
  const banner = document.getElementById('health');
  if (banner) banner.hidden = true;
}
