package main

import (
	"fmt"
	"net"
	"strconv"
)

// checkListen rejects a --listen value that can never be listened on (no
// port, or a port that is not a number in 0-65535), so that it is a bad
// setting (exit 2, one line) rather than a failure to listen.
func checkListen(addr string) error { return checkAddr("listen", addr) }

// checkAddr is checkListen for any address flag.
func checkAddr(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid --%s %q: want host:port", flag, addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("invalid --%s %q: port must be a number from 0 to 65535", flag, addr)
	}
	return nil
}
