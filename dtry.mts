import { startDiscordStandIn } from './test/fixtures/discord-standin.ts';
import { DiscordAdapter } from './src/surfaces/platforms/discord/adapter.ts';
const s = await startDiscordStandIn();
s.channel({ id: '200', type: 1 });
const a = new DiscordAdapter({ token: s.token, apiRoot: s.apiRoot });
let t0 = Date.now();
await a.start(async () => {}, () => {});
console.log('started in', Date.now() - t0);
for (let i = 0; i < 5; i++) { t0 = Date.now(); await a.send('200', 'hi', { thread_id: null, reply_to: null }); console.log('send', Date.now() - t0); }
t0 = Date.now(); await a.sendTyping('200', null); console.log('typing', Date.now() - t0);
t0 = Date.now(); await a.send('200', 'hi', { thread_id: null, reply_to: null }); console.log('send after typing', Date.now() - t0);
await a.stop(); await s.close();
