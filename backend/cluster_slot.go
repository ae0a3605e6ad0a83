package backend

import (
	"strconv"
	"strings"
	"sync"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

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

// hashTag is the part of key that Redis Cluster hashes: the text between
// the first '{' and the first '}' after it, when that is not empty;
// otherwise the whole key.
func hashTag(key string) string {
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

// keySlot is the hash slot of key.
func keySlot(key string) int { return int(crc16(hashTag(key)) % clusterSlots) }

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// slotTag returns a short text that hashes to slot: a key "x{tag}" lives
// in that slot, whatever x is. The table is found once, by counting.
func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, clusterSlots)
		left := clusterSlots
		for n := 0; left > 0; n++ {
			s := strconv.Itoa(n)
			if k := keySlot(s); slotTags[k] == "" {
				slotTags[k] = s
				left--
			}
		}
	})
	return slotTags[slot]
}
