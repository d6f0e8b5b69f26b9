import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Agents, readBody, send } from './http';

const OK = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok';

/**
 * A server that answers each connection's first request, and resets the connection when a second
 * request comes on it without reading it: a kept-alive connection the server had already timed
 * out as the client reused it.
 */
async function startServer(resetFirstRequest = false) {
  const connections: Socket[] = [];
  const server: Server = createServer((socket) => {
    connections.push(socket);
    let requests = 0;
    socket.on('data', () => {
      requests++;
      if (resetFirstRequest || requests > 1) socket.resetAndDestroy();
      else socket.write(OK);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/shop/reports`);
  return {
    url,
    connections,
    close: async () => {
      connections.forEach((socket) => socket.destroy());
      server.close();
      await once(server, 'close');
    },
  };
}

describe('send on a kept-alive connection', () => {
  const agents = new Agents();
  afterAll(() => agents.destroy());

  const post = (url: URL, resendOnStaleConnection = true) =>
    send(url, { method: 'POST', headers: {}, body: '{}', headTimeoutMs: 2000, agents, resendOnStaleConnection });

  it('sends once more, on another connection, when a reused one was already closed by the server', async () => {
    const server = await startServer();
    try {
      expect(String(await readBody(await post(server.url)))).toBe('ok');
      // The same kept-alive connection: the server resets it, unread; the request goes out again.
      expect(String(await readBody(await post(server.url)))).toBe('ok');
      expect(server.connections).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it("leaves a caller's own request to its retry policy: no second send unless asked for", async () => {
    const server = await startServer();
    try {
      expect(String(await readBody(await post(server.url, false)))).toBe('ok');
      await expect(post(server.url, false)).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(server.connections).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('does not send again a request reset on a new connection', async () => {
    const server = await startServer(true);
    try {
      await expect(post(server.url)).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(server.connections).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('sends nothing more once its agents are destroyed (the client closed) while a request was in flight', async () => {
    const own = new Agents();
    const requests: string[] = [];
    const server: Server = createServer((socket) => {
      socket.on('data', (chunk) => {
        requests.push(String(chunk).split(' ')[0]);
        if (requests.length === 1) socket.write(OK); // the first is answered; the second is left hanging
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/shop/retry`);
    const postOwn = () =>
      send(url, {
        method: 'POST',
        headers: {},
        body: '{}',
        headTimeoutMs: 2000,
        agents: own,
        resendOnStaleConnection: true,
      });
    try {
      expect(String(await readBody(await postOwn()))).toBe('ok');
      const hanging = postOwn();
      while (requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      own.destroy();
      await expect(hanging).rejects.toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(requests).toHaveLength(2);
    } finally {
      server.close();
    }
  });
});
