package cli

import (
	"flag"
	"fmt"
	"io"
	"net/http"
)

// DefaultHTTP makes addr the operations endpoint's address unless -http
// was given on fs (parsed already): `worker -local` serves its status page
// on a free loopback port (127.0.0.1:0) unless told otherwise, and
// `-http ""` turns it off. Call it before Start.
func (p *Proc) DefaultHTTP(fs *flag.FlagSet, addr string) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "http" })
	if !given {
		p.HTTP = addr
	}
}

// ServeStatus adds a status page to the operations endpoint, h serving
// both GET / and GET /status.json, logs its address and, when w is not
// nil, writes it there too: "status page: http://ADDR/". Without an
// endpoint it does nothing.
func (p *Proc) ServeStatus(h http.Handler, w io.Writer) {
	if p.Ops == nil {
		return
	}
	p.Ops.Handle("GET /{$}", h)
	p.Ops.Handle("GET /status.json", h)
	url := "http://" + p.Ops.Addr() + "/"
	if p.Log != nil {
		p.Log.Info("status page", "url", url)
	}
	if w != nil {
		fmt.Fprintf(w, "status page: %s\n", url)
	}
}
