// node-redlock v5 (its ioredis-based beta), unchanged, with one client
// pointed at redlockd. IOREDIS (see lib.mjs) picks the ioredis major.
import Redlock, { ExecutionError } from "redlock";
import { Redis, check, eq, ok, run, host, port } from "./lib.mjs";

async function withRedlock(fn) {
  const c = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  await c.connect();
  // retryCount 0: a refused acquire fails at once instead of retrying.
  const redlock = new Redlock([c], { retryCount: 0, driftFactor: 0.01 });
  redlock.on("error", () => {}); // per-attempt errors also surface on the call
  try {
    await fn(redlock, c);
  } finally {
    c.disconnect();
  }
}

async function refused(p, what) {
  try {
    await p;
  } catch (err) {
    check(err instanceof ExecutionError, `${what}: want ExecutionError, got ${err}`);
    return;
  }
  throw new Error(what + ": succeeded, want a refusal");
}

async function single(redlock, c) {
  const lock = await redlock.acquire(["rl:single"], 5000);
  eq(await c.get("rl:single"), lock.value, "GET after acquire");
  ok("acquire");
  await refused(redlock.acquire(["rl:single"], 5000), "second acquire");
  ok("second-acquire-refused");
  const extended = await lock.extend(10000);
  check(extended.expiration > lock.expiration, "extend moved the expiration");
  const pttl = await c.pttl("rl:single");
  check(pttl > 5000 && pttl <= 10000, "PTTL after extend in (5000, 10000]: " + pttl);
  ok("extend");
  await extended.release();
  eq(await c.get("rl:single"), null, "GET after release");
  ok("release");
  // A released lock cannot be extended.
  await refused(extended.extend(5000), "extend after release");
  ok("extend-after-release-refused");
}

async function multi(redlock, c) {
  const keys = ["rl:multi:a", "rl:multi:b", "rl:multi:c"];
  const lock = await redlock.acquire(keys, 5000);
  for (const k of keys) eq(await c.get(k), lock.value, "GET " + k);
  await refused(redlock.acquire(["rl:multi:b"], 5000), "acquire of one held resource");
  // All or nothing: a set overlapping a held key takes none of its keys.
  await refused(redlock.acquire(["rl:multi:free", "rl:multi:c"], 5000), "acquire overlapping a held set");
  eq(await c.get("rl:multi:free"), null, "no partial acquire");
  ok("multi-acquire");
  const extended = await lock.extend(8000);
  for (const k of keys) {
    const pttl = await c.pttl(k);
    check(pttl > 5000 && pttl <= 8000, `PTTL ${k} after extend: ${pttl}`);
  }
  ok("multi-extend");
  await extended.release();
  for (const k of keys) eq(await c.get(k), null, "GET after release " + k);
  ok("multi-release");
}

async function using(redlock, c) {
  let inside = null;
  await redlock.using(["rl:using"], 5000, async (signal) => {
    inside = await c.get("rl:using");
    check(!signal.aborted, "not aborted");
  });
  check(inside !== null, "held inside using()");
  eq(await c.get("rl:using"), null, "released after using()");
  ok("using");
}

await run({
  single: () => withRedlock(single),
  multi: () => withRedlock(multi),
  using: () => withRedlock(using),
});
