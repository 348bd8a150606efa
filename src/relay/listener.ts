/**
 * The relay's wake-ups: a LISTEN session on the outbox channel, reconnected on loss while polling covers
 * the gap, and the lanes' waits that a notification or a stop ends early.
 */
import pg from 'pg';
import { OUTBOX_CHANNEL } from '../db/outbox';
import { connectionOptions } from '../db/pool';
import type { Logger } from '../observability/logger';
import { redactUrl } from '../observability/redact';

/** LISTEN on a dedicated session (outside the pool) and the waits it ends. */
export class OutboxListener {
  private client: pg.Client | undefined;
  /** The LISTEN session being set up, and the timer of the next attempt: close ends both. */
  private connecting: pg.Client | undefined;
  private relisten: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Ends the lanes' current waits early: notifications and stop, or stop only while backing off. */
  private readonly wakeOnNotify = new Set<() => void>();
  private readonly wakeOnStop = new Set<() => void>();
  /**
   * A notification came while no lane waited for one: rows may have committed since the last claim began.
   * The next lane to wait claims at once instead; a claim that begins clears it (its snapshot sees the rows).
   */
  private notified = false;

  /**
   * @param listenUrl the connection string of the LISTEN session.
   * @param log the relay's logger.
   */
  constructor(
    private readonly listenUrl: string,
    private readonly log: Logger,
  ) {}

  /** A claim begins: its snapshot sees every row committed so far, so earlier notifications are spent. */
  claimBegins(): void {
    this.notified = false;
  }

  /** Waits for `ms` or stop, and for a notification too when `onNotify`. */
  sleep(ms: number, onNotify = true): Promise<void> {
    if (this.stopping || (onNotify && this.notified)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeOnNotify.delete(done);
        this.wakeOnStop.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeOnStop.add(done);
      if (onNotify) this.wakeOnNotify.add(done);
    });
  }

  /** Ends every wait, now and to come, and any further reconnection; {@link close} ends the session. */
  stop(): void {
    this.stopping = true;
    for (const wake of [...this.wakeOnStop]) wake();
  }

  /** Ends the LISTEN session, also one still connecting, and any reconnection to come. */
  async close(): Promise<void> {
    clearTimeout(this.relisten);
    const { client, connecting } = this;
    this.client = undefined;
    this.connecting = undefined;
    // A connecting client's end() destroys its socket, so its connect() fails at once instead of hanging;
    // its promise may never settle (no 'end' comes from a socket that never connected), so it is not awaited.
    void connecting?.end().catch(() => {});
    await client?.end().catch(() => {});
  }

  /**
   * LISTEN on a dedicated session; reconnects on loss (polling covers the gap). A stop may come at any
   * point of it: the session being set up is ended by close, and one that connected meanwhile ends itself.
   */
  async listen(): Promise<void> {
    if (this.stopping) return;
    const client = new pg.Client({
      connectionString: this.listenUrl,
      application_name: 'expiry-reminder-relay-listen',
      options: connectionOptions(),
    });
    client.on('notification', () => {
      if (this.wakeOnNotify.size === 0) this.notified = true;
      for (const wake of [...this.wakeOnNotify]) wake();
    });
    client.on('error', (err) => {
      if (this.client !== client) return;
      this.log.warn({ err: redactUrl(err.message) }, 'LISTEN connection lost; polling until it is back');
      this.client = undefined;
      client.end().catch(() => {});
      this.listenLater(1_000);
    });
    this.connecting = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (this.stopping) throw new Error('relay stopping');
      this.client = client;
    } catch (err) {
      void client.end().catch(() => {});
      if (this.stopping) return;
      this.log.warn({ err: redactUrl((err as Error).message) }, 'LISTEN failed; polling until it works');
      this.listenLater(5_000);
    } finally {
      if (this.connecting === client) this.connecting = undefined;
    }
  }

  private listenLater(ms: number): void {
    if (this.stopping) return;
    clearTimeout(this.relisten);
    this.relisten = setTimeout(() => void this.listen(), ms).unref();
  }
}
