// node-redis (npm "redis" v6), unchanged: RESP3 by default, and RESP2.
import { createClient } from "redis";
import { check, eq, ok, run, host, port, compareAndDelete } from "./lib.mjs";

async function withClient(resp, fn) {
  const opts = { socket: { host, port, reconnectStrategy: false } };
  if (resp) opts.RESP = resp;
  const c = createClient(opts);
  c.on("error", () => {}); // errors surface on the awaited commands
  await c.connect();
  try {
    await fn(c);
  } finally {
    c.destroy();
  }
}

async function hello(c, resp) {
  const reply = await c.sendCommand(["HELLO", String(resp)]);
  if (resp === 3) {
    // A RESP3 map decodes to an object: the connection really is RESP3.
    check(reply && !Array.isArray(reply) && typeof reply === "object", "HELLO 3 is a map: " + JSON.stringify(reply));
    eq(Number(reply.proto), 3, "HELLO 3 proto");
  } else {
    check(Array.isArray(reply), "HELLO 2 is a flat array");
  }
  eq(await c.ping(), "PONG", "PING");
}

async function setNX(c, key) {
  eq(await c.set(key, "tok-1", { expiration: { type: "PX", value: 5000 }, condition: "NX" }), "OK", "SET NX PX");
  eq(await c.set(key, "tok-2", { expiration: { type: "PX", value: 5000 }, condition: "NX" }), null, "second SET NX PX");
  // The older option style, still accepted by v6: SET key v EX 5 NX.
  eq(await c.set(key, "tok-3", { EX: 5, NX: true }), null, "SET NX EX of a held key");
  eq(await c.get(key), "tok-1", "GET");
  const pttl = await c.pTTL(key);
  check(pttl > 0 && pttl <= 5000, "PTTL in (0, 5000]: " + pttl);
  eq(await c.eval(compareAndDelete, { keys: [key], arguments: ["tok-2"] }), 0, "compare-and-delete, other token");
  eq(await c.eval(compareAndDelete, { keys: [key], arguments: ["tok-1"] }), 1, "compare-and-delete");
  eq(await c.get(key), null, "GET after release");
  eq(await c.pTTL(key), -2, "PTTL after release");
}

async function evalSha(c, key) {
  const sha = await c.scriptLoad(compareAndDelete);
  eq(sha.length, 40, "SCRIPT LOAD returns a SHA1");
  eq(await c.set(key, "tok", { expiration: { type: "PX", value: 5000 }, condition: "NX" }), "OK", "SET NX PX");
  eq(await c.evalSha(sha, { keys: [key], arguments: ["tok"] }), 1, "EVALSHA compare-and-delete");
}

async function lockCommands(c, key) {
  const reply = await c.sendCommand(["LOCK", key, "5000"]);
  check(Array.isArray(reply) && reply.length === 2, "LOCK replies [token, validity]: " + JSON.stringify(reply));
  const [token, validity] = reply;
  check(typeof token === "string" && token.length > 0, "LOCK token");
  check(validity > 0 && validity <= 5000, "LOCK validity in (0, 5000]: " + validity);
  eq(await c.sendCommand(["LOCK", key, "5000"]), null, "LOCK of a held key");
  eq(await c.get(key), token, "GET");
  eq(await c.sendCommand(["UNLOCK", key, token]), 1, "UNLOCK");
  eq(await c.sendCommand(["UNLOCK", key, token]), 0, "second UNLOCK");
}

async function pipeline(c, prefix) {
  const keys = [1, 2, 3, 4, 5].map((i) => `${prefix}:${i}`);
  const m = c.multi();
  for (const k of keys) m.set(k, "v-" + k, { expiration: { type: "PX", value: 5000 }, condition: "NX" });
  m.set(keys[0], "other", { expiration: { type: "PX", value: 5000 }, condition: "NX" });
  for (const k of keys) m.get(k);
  const replies = await m.execAsPipeline();
  const want = [...keys.map(() => "OK"), null, ...keys.map((k) => "v-" + k)];
  eq(JSON.stringify(replies), JSON.stringify(want), "pipelined SET NX PX and GET");
  const rel = c.multi();
  for (const k of keys) rel.eval(compareAndDelete, { keys: [k], arguments: ["v-" + k] });
  eq(JSON.stringify(await rel.execAsPipeline()), JSON.stringify(keys.map(() => 1)), "pipelined release");
}

// A transaction: multi().exec() is MULTI … EXEC, each reply as Redis's.
async function transaction(c, prefix) {
  const [a, b] = [`${prefix}:a`, `${prefix}:b`];
  const px = { expiration: { type: "PX", value: 5000 }, condition: "NX" };
  const replies = await c.multi().set(a, "tok-a", px).set(b, "tok-b", px).set(a, "other", px).get(a).exists([a, b]).exec();
  eq(JSON.stringify(replies), JSON.stringify(["OK", "OK", null, "tok-a", 2]), "multi().exec() of SET NX PX, GET, EXISTS");
  eq(JSON.stringify(await c.multi().get(a).get(b).exec()), JSON.stringify(["tok-a", "tok-b"]), "a read-only multi().exec()");
  eq(JSON.stringify(await c.multi().del([a, b]).exec()), JSON.stringify([2]), "multi().exec() of DEL");
}

// Native compare-and-set forms that node-redis v6 sends for Redis 8.4's
// SET … IFEQ and DELEX … IFEQ.
async function nativeCAS(c, key) {
  eq(await c.set(key, "tok", { expiration: { type: "PX", value: 2000 }, condition: "NX" }), "OK", "SET NX PX");
  eq(await c.set(key, "tok", { expiration: { type: "PX", value: 8000 }, condition: "IFEQ", matchValue: "tok" }), "OK", "SET PX IFEQ (extend)");
  const pttl = await c.pTTL(key);
  check(pttl > 2000 && pttl <= 8000, "PTTL after SET IFEQ in (2000, 8000]: " + pttl);
  eq(await c.set(key, "other", { expiration: { type: "PX", value: 8000 }, condition: "IFEQ", matchValue: "other" }), null, "SET IFEQ with another token");
  eq(await c.get(key), "tok", "GET after a refused SET IFEQ");
  eq(await c.delEx(key, { condition: "IFEQ", matchValue: "other" }), 0, "DELEX IFEQ with another token");
  eq(await c.delEx(key, { condition: "IFEQ", matchValue: "tok" }), 1, "DELEX IFEQ");
  eq(await c.get(key), null, "GET after DELEX");
}

function suite(resp) {
  const p = `nr${resp ?? 3}`;
  return async () => {
    await withClient(resp, async (c) => {
      await hello(c, resp ?? 3);
      ok(`${p}-hello`);
      await setNX(c, `${p}:setnx`);
      ok(`${p}-set-nx-px`);
      await evalSha(c, `${p}:evalsha`);
      ok(`${p}-evalsha`);
      await lockCommands(c, `${p}:lock`);
      ok(`${p}-lock`);
      await pipeline(c, `${p}:pipe`);
      ok(`${p}-pipeline`);
      await transaction(c, `${p}:multi`);
      ok(`${p}-multi`);
    });
  };
}

await run({
  resp3: suite(undefined), // the library's default
  resp2: suite(2),
  "native-cas": () => withClient(undefined, async (c) => {
    await nativeCAS(c, "nr:cas");
    ok("native-cas");
  }),
});
