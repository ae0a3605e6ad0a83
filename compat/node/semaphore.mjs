// redis-semaphore 5.7, unchanged, with ioredis 5 clients pointed at
// REDLOCKD_ADDR (and ioredis 6, RESP3, for the Mutex once more). Mutex keys are "mutex:<name>" (the library's prefix).
import Redis from "ioredis5";
import Redis6 from "ioredis";
import { LostLockError, Mutex, RedlockMutex, Semaphore } from "redis-semaphore";
import { check, connect, eq, ok, pause, rejects, run, sleep, target } from "./lib.mjs";

// Short enough that a 2 s hold spans several refreshes.
const timing = { lockTimeout: 1000, refreshInterval: 300 };

// notLost is an onLockLost that fails the run: in these groups the lock is
// never lost, so the callback must never fire.
const lostErrors = [];
const notLost = (err) => lostErrors.push(err);

async function withClient(fn, RedisClass = Redis) {
  const c = await connect(RedisClass);
  try {
    await fn(c);
  } finally {
    c.disconnect();
  }
}

// refused: another Mutex on the same name, through the other address,
// cannot take it (one attempt).
async function refused(name, what) {
  const c = await connect(Redis, 0, true);
  try {
    const other = new Mutex(c, name, { ...timing, acquireAttemptsLimit: 1 });
    eq(await other.tryAcquire(), false, what);
  } finally {
    c.disconnect();
  }
}

async function mutex(c) {
  const m = new Mutex(c, "sem:m", { ...timing, onLockLost: notLost });
  await m.acquire();
  await pause("held", { keys: ["mutex:sem:m"], value: m.identifier });
  await refused("sem:m", "second Mutex while held");
  ok("mutex-acquire");
  await sleep(2000); // the hold: more than six refresh intervals, two lockTimeouts
  check(m.isAcquired, "still acquired after 2 s");
  const pttl = await c.pttl("mutex:sem:m");
  check(pttl > 0 && pttl <= 1000, "PTTL after refreshes in (0, 1000]: " + pttl);
  await refused("sem:m", "second Mutex after 2 s");
  await pause("held", { keys: ["mutex:sem:m"], value: m.identifier });
  ok("mutex-refresh");
  await m.release();
  await pause("gone", { keys: ["mutex:sem:m"] });
  const next = new Mutex(c, "sem:m", { ...timing, acquireAttemptsLimit: 1 });
  eq(await next.tryAcquire(), true, "acquire after release");
  await next.release();
  eq(lostErrors.length, 0, "onLockLost calls");
  ok("mutex-release");
}

// external: another client took the lock with SET NX PX; a Mutex given
// its identifier adopts it (the first refresh is the acquire).
async function external(c) {
  const id = "external-" + process.pid;
  const other = await connect(Redis, 0, true);
  try {
    eq(await other.set("mutex:sem:ext", id, "PX", 1000, "NX"), "OK", "SET NX PX by the other client");
  } finally {
    other.disconnect();
  }
  const wrong = new Mutex(c, "sem:ext", { ...timing, identifier: "not-" + id, acquiredExternally: true });
  eq(await wrong.tryAcquire(), false, "adopting with a wrong identifier");
  const m = new Mutex(c, "sem:ext", { ...timing, identifier: id, acquiredExternally: true, onLockLost: notLost });
  await m.acquire();
  await sleep(1500); // longer than the 1 s the other client set: refreshed
  check(m.isAcquired, "adopted lock still acquired");
  await pause("held", { keys: ["mutex:sem:ext"], value: id });
  await refused("sem:ext", "a third Mutex");
  await m.release();
  await pause("gone", { keys: ["mutex:sem:ext"] });
  eq(lostErrors.length, 0, "onLockLost calls");
  ok("mutex-acquired-externally");
}

// lost: the key vanishes on every backend behind the holder's back; the
// next refresh finds it gone and onLockLost fires, once.
async function lost(c) {
  const seen = [];
  const m = new Mutex(c, "sem:lost", { ...timing, onLockLost: (err) => seen.push(err) });
  await m.acquire();
  await pause("drop", { keys: ["mutex:sem:lost"] });
  for (let i = 0; i < 50 && seen.length === 0; i++) await sleep(100); // refresh every 300 ms
  eq(seen.length, 1, "onLockLost calls");
  check(seen[0] instanceof LostLockError, "LostLockError: " + seen[0]);
  check(!m.isAcquired, "not acquired after the loss");
  await m.release();
  ok("mutex-lock-lost");
}

// redlockMutex runs RedlockMutex over three clients of one server, on db
// 1, 2 and 3: three independent keyspaces, as three Redis servers would
// be. (Three clients on one db cannot work: the second and third SET NX
// find the first one's key, so RedlockMutex never counts a majority.)
async function redlockMutex() {
  const dbs = [1, 2, 3];
  const clients = await Promise.all(dbs.map((db) => connect(Redis, db)));
  try {
    const m = new RedlockMutex(clients, "sem:rl", { ...timing, acquireTimeout: 3000, onLockLost: notLost });
    await m.acquire();
    for (const db of dbs) await pause("held", { db, keys: ["mutex:sem:rl"], value: m.identifier });
    const others = await Promise.all(dbs.map((db) => connect(Redis, db, true)));
    try {
      const other = new RedlockMutex(others, "sem:rl", { ...timing, acquireAttemptsLimit: 1 });
      eq(await other.tryAcquire(), false, "second RedlockMutex while held");
    } finally {
      for (const c of others) c.disconnect();
    }
    await sleep(1500);
    check(m.isAcquired, "RedlockMutex still acquired after 1.5 s");
    for (const db of dbs) await pause("held", { db, keys: ["mutex:sem:rl"], value: m.identifier });
    await m.release();
    for (const db of dbs) await pause("gone", { db, keys: ["mutex:sem:rl"] });
    eq(lostErrors.length, 0, "onLockLost calls");
    ok("redlock-mutex");
  } finally {
    for (const c of clients) c.disconnect();
  }
}

// semaphore: the sorted-set Semaphore works on a plain server; redlockd
// refuses its script (a majority vote over per-node counts does not bound
// the holders) with an error that names LOCK … PERMITS.
async function semaphore(c) {
  const s1 = new Semaphore(c, "sem:s", 2, { ...timing, acquireAttemptsLimit: 1 });
  if (target === "redis-server") {
    const s2 = new Semaphore(c, "sem:s", 2, { ...timing, acquireAttemptsLimit: 1 });
    const s3 = new Semaphore(c, "sem:s", 2, { ...timing, acquireAttemptsLimit: 1 });
    eq(await s1.tryAcquire(), true, "first permit");
    eq(await s2.tryAcquire(), true, "second permit");
    eq(await s3.tryAcquire(), false, "third permit of two");
    await s1.release();
    await s2.release();
    ok("semaphore");
    return;
  }
  const err = await rejects(s1.tryAcquire(), "Semaphore.tryAcquire through redlockd");
  check(/PERMITS/.test(String(err && err.message)), "the refusal names PERMITS: " + err);
  ok("semaphore");
}

await run({
  mutex: () => withClient(mutex),
  // ioredis 6 speaks RESP3 by default: the same steps over RESP3.
  "mutex-resp3": () => withClient(mutex, Redis6),
  external: () => withClient(external),
  lost: () => withClient(lost),
  "redlock-mutex": redlockMutex,
  semaphore: () => withClient(semaphore),
});
