// Take a lock through redlockd with an unchanged node `redis` (v4+) client.
//
//   cd examples/node && npm install && node lock.js 6380
//
// (npm install reads this folder's package.json and keeps node_modules
// here.)
import { createClient } from "redis";
import { randomBytes } from "node:crypto";

const port = Number(process.argv[2] ?? 6380);
const client = createClient({ socket: { host: "127.0.0.1", port } });
client.on("error", (err) => console.error("redis client:", err));
await client.connect();

// LOCK key ttl-ms [WAIT ms] -> [token, validity-ms], or null when held.
const reply = await client.sendCommand(["LOCK", "report:daily", "10000", "WAIT", "2000"]);
if (reply === null) {
  console.log("someone else holds report:daily");
} else {
  const [token, validityMs] = reply;
  console.log(`locked with token ${token}, safe for ${validityMs} ms`);
  // ... work, finishing well within validityMs ...
  const released = await client.sendCommand(["UNLOCK", "report:daily", token]);
  console.log("released:", released === 1);
}

// SET key token NX PX ms -> "OK" or null.
const token = randomBytes(16).toString("hex");
if ((await client.set("report:weekly", token, { NX: true, PX: 10000 })) === "OK") {
  const released = await client.sendCommand(["UNLOCK", "report:weekly", token]);
  console.log("released:", released === 1);
}

await client.quit();
