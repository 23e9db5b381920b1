import net from 'node:net';

export interface TcpProxy {
  url: string;
  /** Stops reading what clients send, as a stalled server would: their commands wait, unanswered. */
  freeze(): void;
  /** Reads again; what waited goes through. */
  thaw(): void;
  /** A server gone (restarting, failing over): open connections are cut and new ones closed at once. */
  cut(): void;
  /** Accepts connections again. */
  restore(): void;
  /**
   * A peer gone silent for the connections open now (a failover to another host, a cut that sends no reset): they are
   * never read again, not even by thaw(); new connections go through.
   */
  blackhole(): void;
  close(): Promise<void>;
}

/** A real TCP hop in front of a server (Redis, PostgreSQL), to make it hang or vanish on demand without touching it. */
export async function startTcpProxy(target: { host: string; port: number }, scheme = 'redis'): Promise<TcpProxy> {
  const clients = new Set<net.Socket>();
  let frozen = false;
  let down = false;
  const silenced = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) return void client.destroy();
    const upstream = net.connect(target.port, target.host);
    clients.add(client);
    if (frozen) client.pause();
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => client.write(d));
    const end = () => {
      clients.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    freeze() {
      frozen = true;
      for (const c of clients) c.pause();
    },
    thaw() {
      frozen = false;
      for (const c of clients) if (!silenced.has(c)) c.resume();
    },
    cut() {
      down = true;
      for (const c of clients) c.destroy();
    },
    restore() {
      down = false;
    },
    blackhole() {
      for (const c of clients) {
        c.pause();
        silenced.add(c);
      }
    },
    async close() {
      for (const c of clients) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
