package embedded

import (
	"strconv"
	"strings"
)

// memKey is where key of database db lives in the in-memory node's one
// map. Database 0 keeps the key as it is; the others put their index in
// front, after a NUL that no key of database 0 made by the proxy starts
// with.
func memKey(db int, key string) string {
	if db == 0 {
		return key
	}
	return "\x00" + strconv.Itoa(db) + "\x00" + key
}

// memSplit is memKey reversed: the database and key of the node's key k.
func memSplit(k string) (db int, key string) {
	if !strings.HasPrefix(k, "\x00") {
		return 0, k
	}
	i := strings.IndexByte(k[1:], 0)
	if i < 0 {
		return 0, k
	}
	n, err := strconv.Atoi(k[1 : 1+i])
	if err != nil {
		return 0, k
	}
	return n, k[2+i:]
}
