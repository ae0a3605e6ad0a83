package main

import (
	"fmt"
	"net"
	"strconv"
)

// checkListen rejects a --listen value that can never be listened on (no
// port, or a port that is not a number in 0-65535), so that it is a bad
// setting (exit 2, one line) rather than a failure to listen. A host that
// does not resolve or a port in use stay run-time failures (exit 1).
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid --listen %q: want host:port", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("invalid --listen %q: port must be a number from 0 to 65535", addr)
	}
	return nil
}
