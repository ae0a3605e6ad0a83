package scriptcheck

import (
	"fmt"
	"strings"
)

// keyPos says which arguments of a command (after its name) are keys.
type keyPos uint8

const (
	keyFirst keyPos = iota + 1 // the first argument
	keyAll                     // every argument
	keyNone                    // none (PUBLISH's channel is not a key)
	keyPairs                   // every other one from the first (MSET's key, value pairs)
)

// allowed is one command a replicated script may call: its per-node effect
// is an exclusive, expiring claim on its key, so a majority vote over it
// keeps Redlock's guarantee.
type allowed struct {
	keys   keyPos
	writes bool
}

// admitted are the commands a replicated script may call. PERSIST is not
// one: the proxy never leaves a key without expiry. SELECT is handled
// apart (first, once, with a db known from the text).
var admitted = map[string]allowed{
	// strings
	"GET": {keyFirst, false}, "SET": {keyFirst, true}, "SETNX": {keyFirst, true},
	"SETEX": {keyFirst, true}, "PSETEX": {keyFirst, true}, "GETDEL": {keyFirst, true},
	"DEL": {keyAll, true}, "UNLINK": {keyAll, true}, "EXISTS": {keyAll, false},
	"STRLEN": {keyFirst, false}, "TYPE": {keyFirst, false},
	"GETRANGE": {keyFirst, false}, "MGET": {keyAll, false},
	// MSET and MSETNX leave their keys without expiry: admitted where the
	// script gives every key they write one afterwards (expiry.go).
	"MSET": {keyPairs, true}, "MSETNX": {keyPairs, true},
	// ttls
	"PEXPIRE": {keyFirst, true}, "EXPIRE": {keyFirst, true},
	"PEXPIREAT": {keyFirst, true}, "EXPIREAT": {keyFirst, true},
	"PTTL": {keyFirst, false}, "TTL": {keyFirst, false},
	"PEXPIRETIME": {keyFirst, false}, "EXPIRETIME": {keyFirst, false},
	// hashes (Redisson's reentrant lock)
	"HGET": {keyFirst, false}, "HSET": {keyFirst, true}, "HSETNX": {keyFirst, true},
	"HMSET": {keyFirst, true}, "HDEL": {keyFirst, true}, "HEXISTS": {keyFirst, false},
	"HINCRBY": {keyFirst, true}, "HLEN": {keyFirst, false}, "HGETALL": {keyFirst, false},
	"HKEYS": {keyFirst, false}, "HVALS": {keyFirst, false}, "HMGET": {keyFirst, false},
	// pub/sub: what lock libraries wake their waiters with
	"PUBLISH":  {keyNone, false},
	"SPUBLISH": {keyNone, false},
}

// family is a group of refused commands with the reason they are refused.
type family struct {
	name, why string
}

var (
	famList = family{"list", "a list is a queue whose order differs per node; a majority vote over per-node lists orders nothing"}
	famSet  = family{"set", "a set's members are counted per node; a majority vote over per-node members does not bound the holders"}
	famZSet = family{"sorted set", "a counting semaphore is LOCK key ttl PERMITS n, because a majority vote over per-node counts does not bound the holders"}
	famXs   = family{"stream", "a stream is a log whose entries differ per node; a majority vote over it is no claim"}
	famIncr = family{"counter", "a counter's value differs per node, so a majority vote over per-node counts is no count; LOCK … FENCE hands out increasing tokens"}
	famScan = family{"keyspace scan", "it reads keys that are not named in KEYS"}
	famAdm  = family{"server command", "a script may not administer the server it runs on"}
	famEval = family{"script call", "a script may not run another script or function"}
	famMove = family{"key move", "it moves a value to a key that is not claimed"}
	famNoTL = family{"no expiry", "the proxy never leaves a key without expiry"}
	famPub  = family{"pub/sub", "a script may not subscribe; PUBLISH is the pub/sub command it may call"}
)

// refused maps commands of a known family to it; the rest get the plain
// reason.
var refused = func() map[string]family {
	m := map[string]family{}
	add := func(f family, names string) {
		for _, n := range strings.Fields(names) {
			m[n] = f
		}
	}
	add(famList, "LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LRANGE LLEN LINDEX LSET LREM LTRIM LINSERT LPOS LMOVE BLMOVE BLPOP BRPOP RPOPLPUSH BRPOPLPUSH LMPOP BLMPOP")
	add(famSet, "SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE")
	add(famXs, "XADD XREAD XREADGROUP XRANGE XREVRANGE XLEN XDEL XTRIM XACK XCLAIM XAUTOCLAIM XGROUP XINFO XPENDING XSETID")
	add(famIncr, "INCR INCRBY DECR DECRBY INCRBYFLOAT HINCRBYFLOAT")
	add(famScan, "KEYS SCAN HSCAN SSCAN ZSCAN RANDOMKEY DBSIZE")
	add(famAdm, "FLUSHALL FLUSHDB CONFIG SHUTDOWN DEBUG CLIENT SCRIPT SAVE BGSAVE BGREWRITEAOF REPLICAOF SLAVEOF MONITOR ACL INFO MEMORY MODULE SWAPDB WAIT WAITAOF FAILOVER CLUSTER LATENCY SLOWLOG LASTSAVE ROLE READONLY READWRITE OBJECT SYNC PSYNC COMMAND")
	add(famEval, "EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO FUNCTION")
	add(famMove, "RENAME RENAMENX COPY MOVE MIGRATE RESTORE DUMP SMOVE")
	add(famNoTL, "PERSIST GETSET APPEND SETRANGE")
	add(famPub, "SUBSCRIBE PSUBSCRIBE SSUBSCRIBE UNSUBSCRIBE PUNSUBSCRIBE SUNSUBSCRIBE SPUBLISH")
	return m
}()

// refusedCommand is the reason a script may not call name.
func refusedCommand(name string) string {
	up := strings.ToUpper(clip(name))
	f, ok := refused[up]
	if !ok && strings.HasPrefix(up, "Z") && up != "" {
		f, ok = famZSet, true
	}
	if !ok {
		return fmt.Sprintf("command '%s' is not an exclusive, expiring claim", up)
	}
	return fmt.Sprintf("command '%s' (%s) is not an exclusive, expiring claim; %s", up, f.name, f.why)
}

// clip shortens a name taken from the script for an error: a literal may
// be long, an error should not be.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
