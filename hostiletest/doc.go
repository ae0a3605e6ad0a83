// Package hostiletest sends malformed and abusive input to the proxy and to
// a real redis-server side by side, and requires the same replies and the
// same decision to close the connection; afterwards the proxy must still
// answer, with its file descriptors and heap back near their baseline.
package hostiletest
