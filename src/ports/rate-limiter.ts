/** Per-key request rate limiting; memory in one process, Redis when scaled out. */
export interface RateLimiter {
  /** Takes one request from the key's budget of `perSecond`; false when over the limit. */
  consume(key: string, perSecond: number): Promise<boolean>;
}
