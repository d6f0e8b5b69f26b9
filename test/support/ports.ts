import { createServer, type Server } from 'node:net';

function listenOnSparePort(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('listening socket has no TCP address');
  return address.port;
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it). */
export async function findFreePort(): Promise<number> {
  return (await findFreePorts(1))[0];
}

/** `n` distinct free ports: all sockets are held open together, so no port is returned twice. */
export async function findFreePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) servers.push(await listenOnSparePort());
    return servers.map(portOf);
  } finally {
    await Promise.all(servers.map(close));
  }
}
