// Package resp holds the RESP encoding shared by the proxy's side and the
// backend's side of redlockd.
package resp

import "strconv"

// AppendCommand appends args as a RESP array of bulk strings, the form of
// a request.
func AppendCommand[T ~string | ~[]byte](b []byte, args []T) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
