// The baseline: a bare Fastify POST JSON route, same framework, no auth, no database.
import Fastify from 'fastify';

const app = Fastify();
app.post('/echo', async () => ({ code: 100000, data: { status: 'waiting', output: '' }, message: 'Request Success' }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) });
