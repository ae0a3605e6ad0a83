// node-redlock 4.2 (npm redlock@4, alias redlock4), unchanged, with the
// clients of its time: ioredis 4 and node-redis 3. Its multi-server setup
// is one client per server; with one REDLOCKD_ADDR, the "servers" are
// db 1, 2 and 3 of it: three keyspaces, as three Redis servers would be.
import Redlock from "redlock4";
import Redis4 from "ioredis4";
import redis3 from "redis3";
import { check, connect, eq, host, ok, otherHost, otherPort, pause, port, rejects, run } from "./lib.mjs";

// call runs a command in the callback style both client lines accept.
function call(c, name, ...args) {
  return new Promise((resolve, reject) => c[name](...args, (err, res) => (err ? reject(err) : resolve(res))));
}

function redis3Client(db, other = false) {
  const [h, p] = other ? [otherHost, otherPort] : [host, port];
  return new Promise((resolve, reject) => {
    const c = redis3.createClient({ host: h, port: p, db, retry_strategy: () => new Error("no reconnects in tests") });
    // Selecting again makes a refused SELECT at connect a clear failure
    // (see connect in lib.mjs).
    c.once("ready", () => (db === 0 ? resolve(c) : call(c, "select", db).then(() => resolve(c), reject)));
    c.once("error", reject);
  });
}

const clientsOf = {
  ioredis4: (db, other) => connect(Redis4, db, other),
  redis3: redis3Client,
};

const close = {
  ioredis4: (c) => c.disconnect(),
  redis3: (c) => c.end(true),
};

// clientErrors collects what the servers answered to failed script calls:
// node-redlock 4 emits them as "clientError" and its LockError only counts
// attempts.
const clientErrors = [];

function newRedlock(clients) {
  // retryCount 0: a refused lock fails at once instead of retrying.
  const r = new Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
  r.on("clientError", (err) => clientErrors.push(err.message));
  return r;
}

async function refused(p, what) {
  const err = await rejects(p, what);
  check(err instanceof Redlock.LockError, `${what}: want LockError, got ${err}`);
}

// scenario: lock, a second Redlock refused, extend, unlock, free again.
async function scenario(label, kind, dbs) {
  const mine = await Promise.all(dbs.map((db) => clientsOf[kind](db)));
  // The second Redlock's clients go through the other address.
  const theirs = await Promise.all(dbs.map((db) => clientsOf[kind](db, true)));
  const [first, second] = [newRedlock(mine), newRedlock(theirs)];
  const key = `rl4:${label}`;
  try {
    const lock = await first.lock(key, 5000);
    for (const c of mine) eq(await call(c, "get", key), lock.value, "GET after lock");
    for (const db of dbs) await pause("held", { db, keys: [key], value: lock.value });
    ok(`${label}-lock`);
    await refused(second.lock(key, 5000), "second Redlock's lock");
    ok(`${label}-exclusive`);
    const extended = await lock.extend(10000);
    for (const c of mine) {
      const pttl = await call(c, "pttl", key);
      check(pttl > 5000 && pttl <= 10000, "PTTL after extend in (5000, 10000]: " + pttl);
    }
    ok(`${label}-extend`);
    await extended.unlock();
    for (const db of dbs) await pause("gone", { db, keys: [key] });
    const again = await second.lock(key, 5000);
    await again.unlock();
    ok(`${label}-unlock`);
  } catch (err) {
    if (clientErrors.length) err.message += "; servers answered: " + [...new Set(clientErrors)].join(" | ");
    throw err;
  } finally {
    for (const c of [...mine, ...theirs]) close[kind](c);
  }
}

await run({
  ioredis4: () => scenario("ioredis4", "ioredis4", [1, 2, 3]),
  redis3: () => scenario("redis3", "redis3", [1, 2, 3]),
  // One client on db 0: what worked before SELECT did.
  "ioredis4-db0": () => scenario("ioredis4-db0", "ioredis4", [0]),
});
