package hdfsconn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path"
	"strconv"
	"strings"

	"github.com/colinmarc/hdfs/v2"
)

// Scheme is the prefix of an HDFS URI.
const Scheme = "hdfs://"

// DefaultPort is the namenode port of a URI that names none.
const DefaultPort = "8020"

// ErrBadURI is wrapped by the errors of ParseURI.
var ErrBadURI = errors.New("hdfs: bad URI")

// IsURI reports whether name is an HDFS URI (it starts with "hdfs://").
func IsURI(name string) bool { return strings.HasPrefix(name, Scheme) }

// URI is a parsed HDFS URI.
type URI struct {
	// Addr is the namenode's host:port.
	Addr string
	// Path is the absolute, cleaned path on HDFS.
	Path string
}

// String formats u as hdfs://ADDR/PATH.
func (u URI) String() string { return FormatURI(u.Addr, u.Path) }

// FormatURI returns the URI of path p on the namenode at addr.
func FormatURI(addr, p string) string { return Scheme + addr + path.Clean("/"+p) }

// ParseURI parses an hdfs://HOST[:PORT]/PATH name. Everything after the
// authority is the path, so glob characters such as '?' are part of it.
func ParseURI(s string) (URI, error) {
	if !IsURI(s) {
		return URI{}, fmt.Errorf("%w: %q does not start with %s", ErrBadURI, s, Scheme)
	}
	auth, p := strings.TrimPrefix(s, Scheme), "/"
	if i := strings.IndexByte(auth, '/'); i >= 0 {
		auth, p = auth[:i], auth[i:]
	}
	if auth == "" {
		return URI{}, fmt.Errorf("%w: %q names no namenode (want hdfs://HOST[:PORT]/PATH)", ErrBadURI, s)
	}
	if strings.ContainsAny(auth, "@?#") {
		return URI{}, fmt.Errorf("%w: %q: user info, queries and fragments are not supported", ErrBadURI, s)
	}
	host, port, ok := splitAuthority(auth)
	if !ok {
		return URI{}, fmt.Errorf("%w: %q: bad namenode address %q (want HOST[:PORT] or [IPv6][:PORT])", ErrBadURI, s, auth)
	}
	return URI{Addr: net.JoinHostPort(host, port), Path: path.Clean(p)}, nil
}

// splitAuthority splits HOST[:PORT] or [IPv6][:PORT] into a host and a
// port in 1-65535 (DefaultPort when absent), written canonically.
func splitAuthority(auth string) (host, port string, ok bool) {
	port = DefaultPort
	if rest, found := strings.CutPrefix(auth, "["); found {
		i := strings.IndexByte(rest, ']')
		if i < 0 {
			return "", "", false
		}
		host, rest = rest[:i], rest[i+1:]
		if ip := net.ParseIP(host); ip == nil || !strings.Contains(host, ":") {
			return "", "", false
		}
		if rest != "" {
			if port, found = strings.CutPrefix(rest, ":"); !found {
				return "", "", false
			}
		}
	} else {
		if i := strings.LastIndexByte(auth, ':'); i >= 0 {
			auth, port = auth[:i], auth[i+1:]
		}
		host = auth
		if host == "" || strings.IndexFunc(host, func(r rune) bool {
			return !(r == '.' || r == '-' || r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
		}) >= 0 {
			return "", "", false
		}
	}
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return "", "", false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", "", false
	}
	return host, strconv.Itoa(n), true
}

// DefaultUser is the HDFS user of a client whose options name none: the
// HADOOP_USER_NAME environment variable as Hadoop's own clients read it,
// else the operating system's user name, else "xps".
func DefaultUser() string {
	if u := os.Getenv("HADOOP_USER_NAME"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "xps"
}

// Dial returns a client of the namenode at addr acting as user
// (DefaultUser when empty). The client connects lazily; Dial checks that
// the namenode answers by asking for its server defaults, whose
// BytesPerChecksum it returns for VerifiedReader.
func Dial(addr, user string) (*hdfs.Client, int, error) {
	if user == "" {
		user = DefaultUser()
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{addr}, User: user})
	if err != nil {
		return nil, 0, fmt.Errorf("hdfs: namenode %s: %w", addr, err)
	}
	d, err := c.ServerDefaults()
	if err != nil {
		c.Close()
		return nil, 0, fmt.Errorf("hdfs: namenode %s: %w", addr, err)
	}
	if d.EncryptDataTransfer {
		c.Close()
		return nil, 0, fmt.Errorf("hdfs: namenode %s: encrypted data transfer is not supported", addr)
	}
	return c, d.BytesPerChecksum, nil
}

// VerifiedReader reads from a client's file in reads shorter than a
// checksum chunk (see the package doc), filling each Read as far as it can.
type VerifiedReader struct {
	R     io.Reader
	Chunk int // bytes per checksum; reads are at most Chunk-1 bytes
}

// Read implements io.Reader.
func (v *VerifiedReader) Read(b []byte) (int, error) {
	step := max(v.Chunk-1, 1)
	n := 0
	for n < len(b) {
		m, err := v.R.Read(b[n:min(len(b), n+step)])
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
	}
	return n, nil
}

// Put copies the local file src to path dst on HDFS as Hadoop's
// `hdfs dfs -put` does: into dst+"._COPYING_" first, renamed to dst once
// complete, so that readers never see a partial file. An existing dst is
// an error unless overwrite is set. It returns the bytes copied.
func Put(c *hdfs.Client, src, dst string, overwrite bool) (int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("hdfs: put: %w", err)
	}
	defer f.Close()
	if _, err := c.Stat(dst); err == nil && !overwrite {
		return 0, fmt.Errorf("hdfs: put %s: %s exists", src, dst)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("hdfs: put %s: %w", src, err)
	}
	if err := c.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return 0, fmt.Errorf("hdfs: put %s: %w", src, err)
	}
	tmp := dst + "._COPYING_"
	if err := c.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("hdfs: put %s: %w", src, err)
	}
	w, err := c.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("hdfs: put %s: %w", src, err)
	}
	n, err := io.Copy(w, f)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.Rename(tmp, dst)
	}
	if err != nil {
		c.Remove(tmp)
		return n, fmt.Errorf("hdfs: put %s to %s: %w", src, dst, err)
	}
	return n, nil
}
