package rowsrc

// NewSourceConn is newSource for the tests: a source over conn.
var NewSourceConn = newSource
