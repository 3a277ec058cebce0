/**
 * Backup, restore and import (contract section 15), behind the admin token. The uploads stream
 * (`streamBody`): no body limit, constant memory; src/models/backup.ts does the work.
 */
import type { TransfersView } from '../core/deps.js';
import { importFormat } from '../../models/import-rows.js';
import { InvalidArgumentError } from '../../errors.js';
import type { Audit } from '../guards/audit.js';
import { exportFileName, pumpToSink } from '../export/export.js';
import { boolean, one, required } from '../core/params.js';
import type { RequestCtx } from '../core/request.js';
import { StreamReply } from '../core/reply.js';
import type { Guard, Router } from '../core/router.js';

function upload(ctx: RequestCtx): AsyncIterable<Uint8Array> {
  if (ctx.bodyStream === undefined) throw new InvalidArgumentError('request body is missing');
  return ctx.bodyStream;
}

export function addBackupRoutes(router: Router, transfers: TransfersView, admin: Guard, audit: Audit): void {
  router.group({ prefix: '/api/v1/datacenter', guard: admin }, (g) => {
    g.get('/backup', (ctx) => {
      const { model, chunks } = transfers.backup(required(ctx.query, 'uuid'));
      // When the data starts to leave: a client that cuts the download short has still taken part of it.
      audit.event('data.backup', ctx, { type: 'model', name: model.name, uuid: model.uuid });
      const file = exportFileName(model, 'jsonl', Date.now()).replace(/\.jsonl$/, '.backup.jsonl');
      const headers = { 'Content-Type': 'application/x-ndjson; charset=utf-8', 'Content-Disposition': `attachment; filename="${file}"` };
      return new StreamReply(headers, (sink) => pumpToSink(chunks, sink));
    });

    g.post(
      '/restore',
      async (ctx) => {
        const replace = boolean(ctx.query, 'replace', false);
        const result = await transfers.restore(upload(ctx), { replace });
        audit.event('data.restore', ctx, { type: 'model', name: result.name, uuid: result.uuid });
        return result;
      },
      { streamBody: true },
    );

    g.post(
      '/importData',
      async (ctx) => {
        const uuid = required(ctx.query, 'uuid');
        const format = importFormat(one(ctx.query, 'format'));
        const result = await transfers.importData(uuid, format, upload(ctx));
        audit.event('data.import', ctx, { type: 'model', name: result.name, uuid });
        return result;
      },
      { streamBody: true },
    );
  });
}
