/**
 * Per-key request limits, checked on every authenticated request: the rate (101003) and the
 * requests in flight (101004). One process keeps them in memory; with REDIS_URL every API node
 * shares them, so a key's limits hold however the load balancer spreads its requests.
 * (Unfinished tasks, the other half of 101004, are counted by the task store, not here.)
 */
export interface RequestLimits {
  /**
   * Takes one request from the key's budget of `perSecond`; false when the budget is spent.
   * Fractional limits are allowed: 0.5 means one request per 2 seconds.
   */
  consumeRate(keyId: string, perSecond: number): Promise<boolean>;
  /**
   * Admits one more request in flight for the key when fewer than `limit` are; null when full.
   * Every ticket must be handed back with leave() when its request ends.
   */
  enter(keyId: string, limit: number): Promise<InFlightTicket | null>;
  /**
   * Frees the ticket's slot; call it once per ticket. Never rejects: a shared slot that could
   * not be freed (store unreachable) expires by itself.
   */
  leave(ticket: InFlightTicket): Promise<void>;
  /**
   * Counts one failed authentication (an invalid API key) of a client (its IP address). Returns
   * null while the client is within `policy`, else the milliseconds until it may try again: more
   * than `policy.failures` failures within `policy.windowSeconds` block the client for
   * `policy.blockSeconds`. Only failures are counted; a valid key is never checked against this.
   */
  recordAuthFailure(client: string, policy: AuthFailurePolicy): Promise<number | null>;
  /**
   * The milliseconds `client` is still blocked for under `policy` (recordAuthFailure's block), or null when it is
   * not blocked; counts nothing. For a secret a person chose (the admin token), whose right value must be refused
   * too while its client is blocked, or the block would not slow guessing.
   */
  authFailureWait(client: string, policy: AuthFailurePolicy): Promise<number | null>;
  close(): Promise<void>;
}

/** How many invalid keys one client may present before it is slowed (AUTH_FAILURE_* in the config). */
export interface AuthFailurePolicy {
  failures: number;
  windowSeconds: number;
  blockSeconds: number;
}

/** Proof of one admitted request; adapters carry what they need to free it behind this. */
export interface InFlightTicket {
  readonly keyId: string;
}
