/**
 * The relay's wake-ups: a LISTEN session on the outbox channel, reconnected on loss while polling covers
 * the gap, and the lanes' waits that a notification or a stop ends early.
 */
import pg from 'pg';
import { OUTBOX_CHANNEL } from '../db/outbox';
import { connectionOptions, serverKeepalives } from '../db/pool';
import type { Logger } from '../observability/logger';
import { redactUrl } from '../observability/redact';
import { errorOf } from '../domain/failures';

/**
 * How the LISTEN session notices a path to PostgreSQL that stopped answering. A session that only listens
 * sends nothing: without these, a connect to a host that drops packets hangs until the OS gives up (minutes),
 * and a connection cut silently (no reset) stays "open" for hours, every notification lost meanwhile, the
 * relay down to its poll. Polling still covers every gap; these bound how long the relay polls.
 */
export interface ListenTimings {
  /** A connect (and its LISTEN) that has not finished by then is given up and tried again. */
  connectTimeoutMs: number;
  /**
   * Idle time before TCP keepalive probes, on both ends: the client's socket and the server's
   * `tcp_keepalives_idle` (then every 10 s, 3 times), so the server also ends a session whose relay vanished.
   * 0 leaves them off.
   */
  keepaliveIdleMs: number;
  /** How often the session runs a `select 1`; one that gets no reply within {@link connectTimeoutMs} is lost. */
  checkIntervalMs: number;
}

/** The defaults: DATABASE_TCP_KEEPALIVE_IDLE's default, and the pools' connect timeout. */
export const DEFAULT_LISTEN_TIMINGS: ListenTimings = {
  connectTimeoutMs: 10_000,
  keepaliveIdleMs: 30_000,
  checkIntervalMs: 30_000,
};

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

  private check: NodeJS.Timeout | undefined;

  /**
   * @param listenUrl the connection string of the LISTEN session.
   * @param log the relay's logger.
   * @param timings how a silent path is noticed ({@link DEFAULT_LISTEN_TIMINGS}).
   */
  constructor(
    private readonly listenUrl: string,
    private readonly log: Logger,
    private readonly timings: ListenTimings = DEFAULT_LISTEN_TIMINGS,
  ) {}

  /** A claim begins: its snapshot sees every row committed so far, so earlier notifications are spent. */
  claimBegins(): void {
    this.notified = false;
  }

  /** Waits for `ms` or stop, and for a notification too unless `wakeOnNotify` is false. */
  sleep(ms: number, { wakeOnNotify: onNotify = true }: { wakeOnNotify?: boolean } = {}): Promise<void> {
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
    clearInterval(this.check);
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
    const { connectTimeoutMs, keepaliveIdleMs } = this.timings;
    const client = new pg.Client({
      connectionString: this.listenUrl,
      application_name: 'expiry-reminder-relay-listen',
      connectionTimeoutMillis: connectTimeoutMs,
      query_timeout: connectTimeoutMs,
      keepAlive: keepaliveIdleMs > 0,
      keepAliveInitialDelayMillis: keepaliveIdleMs || undefined,
      options: connectionOptions(keepaliveIdleMs > 0 ? serverKeepalives(keepaliveIdleMs) : undefined),
    });
    client.on('notification', () => {
      if (this.wakeOnNotify.size === 0) this.notified = true;
      for (const wake of [...this.wakeOnNotify]) wake();
    });
    client.on('error', (err) => this.lost(client, err));
    this.connecting = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
      if (this.stopping) throw new Error('relay stopping');
      this.client = client;
      this.checkEvery(client);
    } catch (err) {
      void client.end().catch(() => {});
      if (this.stopping) return;
      this.log.warn({ err: redactUrl(errorOf(err).message) }, 'LISTEN failed; polling until it works');
      this.listenLater(5_000);
    } finally {
      if (this.connecting === client) this.connecting = undefined;
    }
  }

  /** The session `client` is gone (an error, or a check with no reply): end it and listen again soon. */
  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client) return;
    this.log.warn({ err: redactUrl(err.message) }, 'LISTEN connection lost; polling until it is back');
    this.client = undefined;
    clearInterval(this.check);
    client.end().catch(() => {});
    this.listenLater(1_000);
  }

  /**
   * A `select 1` on the session every {@link ListenTimings.checkIntervalMs}: a query that gets no reply in
   * time (`query_timeout`) fails, and the session is reopened, whatever the OS thinks of the socket.
   */
  private checkEvery(client: pg.Client): void {
    clearInterval(this.check);
    this.check = setInterval(() => {
      client.query('select 1').catch((err: Error) => this.lost(client, err));
    }, this.timings.checkIntervalMs).unref();
  }

  private listenLater(ms: number): void {
    if (this.stopping) return;
    clearTimeout(this.relisten);
    this.relisten = setTimeout(() => void this.listen(), ms).unref();
  }
}
