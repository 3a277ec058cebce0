/**
 * The service under soak (child of bench/soak.ts): the real `startService` with the given ini file, plus
 * what only the server process can see: RSS (worker threads included), heap, event-loop delay
 * (`monitorEventLoopDelay`, reset at each sample) and CPU time. Talks to the parent over IPC:
 * -> {type:'ready', port}; <- {type:'sample'} -> {type:'sample', ...}; <- {type:'stop'} -> {type:'stopped'}.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pino } from 'pino';
import type * as ConfigModule from '../src/config/index.js';
import type * as ServerModule from '../src/server.js';

// The service as `npm run build` compiled it (dist/), not dist-bench's copy: its script pool loads
// dist/scripts/lua/worker.js and its UI lives next to dist/.
const dist = new URL('../../dist/', import.meta.url);
const { loadConfig } = (await import(new URL('config/index.js', dist).href)) as typeof ConfigModule;
const { startService } = (await import(new URL('server.js', dist).href)) as typeof ServerModule;

export interface ServerSample {
  type: 'sample';
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  eldP50Ms: number;
  eldP99Ms: number;
  eldMaxMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
}

const file = process.argv[2];
if (file === undefined || process.send === undefined) {
  process.stderr.write('usage: soak-server.js CONFIG_FILE (started by bench/soak.ts with an IPC channel)\n');
  process.exit(2);
}
const send = (m: object): void => {
  process.send?.(m);
};

const { config } = await loadConfig({ file, env: {} });
const logger = pino({ level: config.main.logLevel }, pino.destination(2));
const service = await startService(config, logger);
const eld = monitorEventLoopDelay({ resolution: 10 });
eld.enable();
const MB = 1024 * 1024;
send({ type: 'ready', port: service.port });

process.on('message', (m: { type?: string }) => {
  if (m.type === 'sample') {
    const mem = process.memoryUsage();
    const cpu = process.cpuUsage();
    const sample: ServerSample = {
      type: 'sample',
      rssMb: mem.rss / MB,
      heapUsedMb: mem.heapUsed / MB,
      externalMb: mem.external / MB,
      eldP50Ms: eld.percentile(50) / 1e6,
      eldP99Ms: eld.percentile(99) / 1e6,
      eldMaxMs: eld.max / 1e6,
      cpuUserMs: cpu.user / 1000,
      cpuSystemMs: cpu.system / 1000,
    };
    eld.reset();
    send(sample);
  } else if (m.type === 'stop') {
    service.stop().then(
      () => {
        send({ type: 'stopped' });
        process.exit(0);
      },
      (err: unknown) => {
        process.stderr.write(`stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  }
});
process.on('disconnect', () => {
  void service.stop().finally(() => process.exit(0));
});
