// A free loopback port, asked of the system once: the app keeps the same port across restarts
// (a page's URL must survive a reload), so `--port 0` cannot be handed to each new process. The
// tests' PostgreSQL and the bench's servers take theirs from here too.

import * as net from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
