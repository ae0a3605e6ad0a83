// Package oneline puts a message on one line, for places where a line
// break would end it early: RESP error and status replies, INFO fields,
// log lines and flag errors.
package oneline

import "strings"

var breaks = strings.NewReplacer("\r", " ", "\n", " ")

// Of returns s with every CR and LF replaced by a space, as Redis does to
// its own error replies; everything else is kept, so that a reply quoting
// a client's argument quotes it as Redis would.
func Of(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return breaks.Replace(s)
}
