import Database from 'better-sqlite3';

/**
 * The common way to build this store: better-sqlite3, a table per model, WAL, OFFSET paging and
 * "last" by max id, as RHILEX does (minus its SQL injection). The benchmarks run it on the same records.
 */
export interface SqliteBaselineOptions {
  file: string;
  synchronous: 'NORMAL' | 'FULL';
  fields: readonly string[];
}

export type Row = Record<string, unknown>;

export class SqliteBaseline {
  private readonly db: Database.Database;
  private readonly insertStmt: Database.Statement;
  private readonly updateLastStmt: Database.Statement;
  private readonly latestStmt: Database.Statement;
  private readonly pageDescStmt: Database.Statement;
  private readonly countStmt: Database.Statement;
  readonly fields: readonly string[];

  constructor(options: SqliteBaselineOptions) {
    this.fields = options.fields;
    this.db = new Database(options.file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous}`);
    const columns = options.fields.map((f) => `"${f}"`).join(', ');
    this.db.exec(
      `CREATE TABLE IF NOT EXISTS data (id INTEGER PRIMARY KEY AUTOINCREMENT, create_at INTEGER NOT NULL, ${options.fields
        .map((f) => `"${f}"`)
        .join(', ')})`,
    );
    const placeholders = options.fields.map(() => '?').join(', ');
    this.insertStmt = this.db.prepare(`INSERT INTO data (create_at, ${columns}) VALUES (?, ${placeholders})`);
    this.updateLastStmt = this.db.prepare(
      `UPDATE data SET ${options.fields.map((f) => `"${f}" = ?`).join(', ')} WHERE id = (SELECT max(id) FROM data)`,
    );
    this.latestStmt = this.db.prepare('SELECT * FROM data ORDER BY id DESC LIMIT 1');
    this.pageDescStmt = this.db.prepare('SELECT * FROM data ORDER BY id DESC LIMIT ? OFFSET ?');
    this.countStmt = this.db.prepare('SELECT count(*) AS n FROM data').pluck();
  }

  insert(record: Row): number {
    const values = this.fields.map((f) => record[f]);
    return Number(this.insertStmt.run(Date.now(), ...values).lastInsertRowid);
  }

  /** Bulk load inside one transaction: only for preparing deep tables quickly. */
  insertMany(records: Iterable<Row>): void {
    const load = this.db.transaction((rows: Iterable<Row>) => {
      for (const r of rows) this.insert(r);
    });
    load(records);
  }

  updateLast(record: Row): void {
    this.updateLastStmt.run(...this.fields.map((f) => record[f]));
  }

  latest(): Row | undefined {
    return this.latestStmt.get() as Row | undefined;
  }

  page(current: number, size: number): { total: number; records: Row[] } {
    const total = this.countStmt.get() as number;
    const records = this.pageDescStmt.all(size, (current - 1) * size) as Row[];
    return { total, records };
  }

  close(): void {
    this.db.close();
  }
}
