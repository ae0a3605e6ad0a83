// Package commands is redlockd's command table: it parses and validates each
// command, calls the lock cluster (package quorum), and maps the outcome to
// the reply a Redis client expects, including Redis's own error texts.
//
// It never touches sockets: replies go through the Writer interface, which
// the proxy implements in RESP2 or RESP3 per connection, and the state of a
// connection lives in a Session that the proxy opens and closes.
//
// Each cmd_<family>.go file starts with the registration of its commands,
// so the whole command surface can be read from those init functions.
package commands
