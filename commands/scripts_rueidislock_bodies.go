package commands

// Script bodies of rueidislock (the lock package of rueidis, lock.go of
// v1.0.79), byte for byte: Redis and the library name them by SHA1. Each
// script reads its key after writing it only so that a tracking client
// hears of the key's next change; redlockd tracks every key a script
// names anyway.

// rueidislock acquire (SET NX PXAT, the default).
// SHA1 3875d208d9e377969d2022550302cc83ad17b584.
const rueidisAcquireAt = `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`

// rueidislock acquire with FallbackSETPX (SET NX PX).
// SHA1 fa3d1aaa7e4145457755016a3d5daf72fa7a11bf.
const rueidisAcquirePX = `local r = redis.call("SET",KEYS[1],ARGV[1],"NX","PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`

// rueidislock forced acquire (ForceWithContext: SET PXAT).
// SHA1 c10e8119872659b926e8e28002d9b7fccbf15617.
const rueidisForceAt = `local r = redis.call("SET",KEYS[1],ARGV[1],"PXAT",ARGV[2]);redis.call("GET",KEYS[1]);return r`

// rueidislock forced acquire with FallbackSETPX (SET PX).
// SHA1 4384ed08baff4dd7071b6c78c516a2fded4ee3e7.
const rueidisForcePX = `local r = redis.call("SET",KEYS[1],ARGV[1],"PX",ARGV[2]);redis.call("GET",KEYS[1]);return r`

// rueidislock extend: PEXPIREAT to the deadline where the value holds the
// key.
// SHA1 852ba6ec6104340ced36643283c856d4698569e4.
const rueidisExtend = `if redis.call("GET",KEYS[1]) == ARGV[1] then local r = redis.call("PEXPIREAT",KEYS[1],ARGV[2]);redis.call("GET",KEYS[1]);return r end;return 0`

// rueidislock release: delete the key where the value holds it (the
// library passes its deadline as a second argument, unused).
// SHA1 9eb62214c9af87ae5f9a9f12bb4520281c0d2ae1.
const rueidisRelease = `if redis.call("GET",KEYS[1]) == ARGV[1] then return redis.call("DEL",KEYS[1]) end;return 0`
