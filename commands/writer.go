package commands

// Writer builds the reply to one command. The proxy implements it for each
// connection, in RESP2 or RESP3 depending on the session's protocol; the
// command table only chooses the reply's shape.
type Writer interface {
	// WriteSimple writes a status reply (+OK).
	WriteSimple(s string)
	// WriteError writes an error reply; s starts with its code (ERR, NOQUORUM…).
	WriteError(s string)
	WriteBulk(b []byte)
	WriteBulkString(s string)
	WriteInt(n int64)
	// WriteNull writes the null reply ($-1 in RESP2, _ in RESP3).
	WriteNull()
	// WriteNullArray writes the null of an array reply (*-1 in RESP2, _
	// in RESP3): EXEC's when a WATCHed key changed.
	WriteNullArray()
	// WriteArray starts an array of n elements, written next.
	WriteArray(n int)
	// WriteMap starts a map of n key/value pairs (a flat array of 2n in RESP2).
	WriteMap(n int)
	// WriteSet starts a set of n elements (an array in RESP2).
	WriteSet(n int)
	// WriteDouble writes a double (a bulk string in RESP2).
	WriteDouble(f float64)
	// WriteDoubleText writes a double spelled as s (a node wrote it so).
	WriteDoubleText(s string)
	// WriteBool writes a boolean (the integer 1 or 0 in RESP2).
	WriteBool(b bool)
	// WriteBigNumber writes a big number of the digits s (a bulk string
	// in RESP2).
	WriteBigNumber(s string)
	// WriteVerbatim writes a verbatim text string (a bulk string in RESP2).
	WriteVerbatim(format, s string)
	// WritePush starts a push of n elements (an array in RESP2), written
	// next: pub/sub confirmations are pushes in RESP3.
	WritePush(n int)
}
