// Package slot computes Redis Cluster hash slots (CRC16 of the key's hash
// tag, mod 16384) and names keys that share a lock key's slot.
package slot

import (
	"strconv"
	"strings"
	"sync"
)

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// HashTag is the part of key that Redis Cluster hashes: the text between
// the first '{' and the first '}' after it, when that is not empty;
// otherwise the whole key.
func HashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// Of is the hash slot of key.
func Of(key string) int { return int(crc16(HashTag(key)) % Count) }

var (
	tagsOnce sync.Once
	tags     []string
)

// Tag returns a short text of digits that hashes to slot: a key "x{tag}y"
// lives in that slot whatever x (without braces) and y are. The table is
// found once, by counting.
func Tag(slot int) string {
	tagsOnce.Do(func() {
		tags = make([]string, Count)
		left := Count
		for n := 0; left > 0; n++ {
			s := strconv.Itoa(n)
			if k := Of(s); tags[k] == "" {
				tags[k] = s
				left--
			}
		}
	})
	return tags[slot]
}

// Tagged is how a key the proxy keeps for the lock key key (its hold
// count, fence, wait mark, a round's mark) names it: prefix + Tagged(key)
// lives in key's slot. A key without braces is "{key}"; a key with braces
// (its own hash tag, or braces that are not one) is "{<digits>}key",
// digits that hash to key's slot, so that either form names one key only.
func Tagged(key string) string { return Key("", key) }

// Key is prefix + Tagged(key), built in one allocation: the name of most
// keys the proxy keeps, made on every lock command.
func Key(prefix, key string) string {
	if !strings.ContainsAny(key, "{}") {
		return prefix + "{" + key + "}"
	}
	return prefix + "{" + Tag(Of(key)) + "}" + key
}
