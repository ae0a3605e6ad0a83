package backend

import "strconv"

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
