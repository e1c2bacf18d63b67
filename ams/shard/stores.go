package shard

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

// storeRoots are the store locations a shard's RPCs may name
// (Options.Stores), cleaned once when the shard starts: directories made
// absolute (against the working directory then), HDFS URIs parsed.
type storeRoots struct {
	dirs  []string
	hdfs  []hdfsconn.URI
	names []string // every root, cleaned, for messages
}

// parseStoreRoots cleans roots; the error joins one error per root that
// is empty or a malformed hdfs:// URI (those are left out of the result).
func parseStoreRoots(roots []string) (storeRoots, error) {
	var r storeRoots
	var errs []error
	for _, root := range roots {
		switch {
		case root == "":
			errs = append(errs, fmt.Errorf("%w: an empty store root", ams.ErrBadSpec))
		case hdfsconn.IsURI(root):
			u, err := hdfsconn.ParseURI(root)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: store root: %w", ams.ErrBadSpec, err))
				continue
			}
			r.hdfs = append(r.hdfs, u)
			r.names = append(r.names, u.String())
		default:
			abs, err := filepath.Abs(root)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: store root %q: %w", ams.ErrBadSpec, root, err))
				continue
			}
			r.dirs = append(r.dirs, abs)
			r.names = append(r.names, abs)
		}
	}
	return r, errors.Join(errs...)
}

// allowed checks a store location an RPC names against the roots and
// returns the location to open: for a directory, absolute and cleaned,
// with the symbolic links of its deepest existing ancestor resolved; for
// an HDFS URI, cleaned (hdfsconn.ParseURI). A location is allowed when it
// equals a root or lies under one, component by component (/data/snap2
// is not under /data/snap); a directory is compared with its links
// resolved, and so is each root, so that a link inside a root that points
// out of it leads nowhere. An HDFS location must name the root's namenode
// address as the root does. Anything else, and any location when there
// are no roots, is refused with an error that wraps ams.ErrStoreNotAllowed
// and names the location and the roots. It creates and opens nothing.
func (r storeRoots) allowed(location string) (string, error) {
	if location == "" {
		return "", fmt.Errorf("%w: no store location", ams.ErrBadRequest)
	}
	if len(r.names) == 0 {
		return "", fmt.Errorf("%w: store %q: this shard was started with no store roots, so it writes and reads no snapshot or export (start it with -store DIR|hdfs://HOST:PORT/PATH[,...], shard.Options.Stores)",
			ams.ErrStoreNotAllowed, location)
	}
	if hdfsconn.IsURI(location) {
		u, err := hdfsconn.ParseURI(location)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ams.ErrBadRequest, err)
		}
		for _, root := range r.hdfs {
			if strings.EqualFold(u.Addr, root.Addr) && within(root.Path, u.Path, '/') {
				return u.String(), nil
			}
		}
		return "", r.refuse(location, nil)
	}
	abs, err := filepath.Abs(location)
	if err != nil {
		return "", r.refuse(location, err)
	}
	real, err := resolveExisting(abs)
	if err != nil {
		return "", r.refuse(location, err)
	}
	for _, root := range r.dirs {
		if rr, err := resolveExisting(root); err == nil && within(rr, real, filepath.Separator) {
			return real, nil
		}
	}
	return "", r.refuse(location, nil)
}

// refuse is the error of a location under no root (cause: why it could
// not be checked, if that is the reason).
func (r storeRoots) refuse(location string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%w: store %q: %v (allowed: %s)", ams.ErrStoreNotAllowed, location, cause, strings.Join(r.names, ", "))
	}
	return fmt.Errorf("%w: store %q is under none of this shard's store roots (%s)", ams.ErrStoreNotAllowed, location, strings.Join(r.names, ", "))
}

// within reports whether path p is root or lies under it, both clean
// absolute paths with separator sep.
func within(root, p string, sep byte) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(sep)) {
		root += string(sep)
	}
	return strings.HasPrefix(p, root)
}

// resolveExisting returns clean absolute path p with the symbolic links
// of its deepest existing ancestor (p itself if it exists) resolved and
// the missing rest appended as it is.
func resolveExisting(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// checkStore is the one check of a store location that every RPC naming
// a store (WriteSnapshot, Restore, WriteExport) makes before it creates,
// opens or changes anything: the location to open, or an error wrapping
// ams.ErrStoreNotAllowed (see storeRoots.allowed).
func (s *Shard) checkStore(location string) (string, error) {
	loc, err := s.stores.allowed(location)
	if err != nil {
		return "", fmt.Errorf("shard %s: %w", s.opts.ID, err)
	}
	return loc, nil
}

// openStore opens the store at a location checkStore returned.
func openStore(location string) (snapshot.Store, error) {
	store, err := snapshot.OpenStore(location, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ams.ErrBadRequest, err)
	}
	return store, nil
}
