// ioredis, unchanged: its default protocol (HELLO 3 in v6, RESP2 in v5)
// and RESP2. IOREDIS (see lib.mjs) picks the major version.
import { Redis, ioredisName, check, eq, ok, run, host, port, compareAndDelete } from "./lib.mjs";

async function withClient(protocol, fn) {
  const opts = { host, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null };
  if (protocol) opts.protocol = protocol;
  const c = new Redis(opts);
  c.on("error", () => {}); // errors surface on the awaited commands
  await c.connect();
  try {
    await fn(c);
  } finally {
    c.disconnect();
  }
}

async function basics(c, key, protocol) {
  eq(await c.ping(), "PONG", "PING");
  if (ioredisName === "ioredis" && protocol === undefined) {
    // v6 falls back to RESP2 silently when HELLO 3 is refused; its
    // (internal) connection condition tells which one it settled on.
    eq(c.condition?.protocol, 3, "ioredis v6 negotiated RESP3");
  }
  eq(await c.set(key, "tok-1", "PX", 5000, "NX"), "OK", "SET PX NX");
  eq(await c.set(key, "tok-2", "NX", "PX", 5000), null, "second SET NX PX");
  eq(await c.get(key), "tok-1", "GET");
  const pttl = await c.pttl(key);
  check(pttl > 0 && pttl <= 5000, "PTTL in (0, 5000]: " + pttl);
  eq(await c.eval(compareAndDelete, 1, key, "tok-2"), 0, "EVAL compare-and-delete, other token");
  eq(await c.eval(compareAndDelete, 1, key, "tok-1"), 1, "EVAL compare-and-delete");
  eq(await c.get(key), null, "GET after release");
}

async function definedCommand(c, key) {
  // defineCommand sends EVALSHA and falls back to EVAL on NOSCRIPT.
  c.defineCommand("releaseLock", { numberOfKeys: 1, lua: compareAndDelete });
  eq(await c.set(key, "tok", "PX", 5000, "NX"), "OK", "SET PX NX");
  eq(await c.releaseLock(key, "tok"), 1, "defined release command");
  eq(await c.releaseLock(key, "tok"), 0, "defined release command, again");
}

async function lockCommands(c, key) {
  const reply = await c.call("LOCK", key, 5000);
  check(Array.isArray(reply) && reply.length === 2, "LOCK replies [token, validity]: " + JSON.stringify(reply));
  const [token, validity] = reply;
  check(validity > 0 && validity <= 5000, "LOCK validity in (0, 5000]: " + validity);
  eq(await c.call("LOCK", key, 5000), null, "LOCK of a held key");
  eq(await c.call("UNLOCK", key, token), 1, "UNLOCK");
}

async function pipeline(c, prefix) {
  const keys = [1, 2, 3, 4, 5].map((i) => `${prefix}:${i}`);
  const p = c.pipeline();
  for (const k of keys) p.set(k, "v-" + k, "PX", 5000, "NX");
  p.set(keys[0], "other", "PX", 5000, "NX");
  for (const k of keys) p.get(k);
  for (const k of keys) p.eval(compareAndDelete, 1, k, "v-" + k);
  const res = await p.exec();
  for (const [err] of res) check(err === null, "pipelined command failed: " + err);
  const want = [...keys.map(() => "OK"), null, ...keys.map((k) => "v-" + k), ...keys.map(() => 1)];
  eq(JSON.stringify(res.map(([, v]) => v)), JSON.stringify(want), "pipelined replies");
}

function suite(protocol) {
  const p = `io${protocol ?? "default"}`;
  return () => withClient(protocol, async (c) => {
    await basics(c, `${p}:basic`, protocol);
    ok(`${p}-set-nx-px-eval`);
    await definedCommand(c, `${p}:defined`);
    ok(`${p}-evalsha`);
    await lockCommands(c, `${p}:lock`);
    ok(`${p}-lock`);
    await pipeline(c, `${p}:pipe`);
    ok(`${p}-pipeline`);
  });
}

await run({ default: suite(undefined), resp2: suite(2) });
