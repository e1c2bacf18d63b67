package hdfstest

import (
	"math"
	"sort"
	"strings"
	"time"
)

// Identifier bases, the same as a fresh Hadoop namenode's.
const (
	rootInodeID   = 16385
	firstBlockID  = 1<<30 + 1 // 1073741825, Hadoop's first sequential block id
	firstGenStamp = 1001
)

// CreateFlag bits of CreateRequestProto.createFlag (org.apache.hadoop.fs.CreateFlag).
const (
	createFlagCreate    = 0x01
	createFlagOverwrite = 0x02
	createFlagAppend    = 0x04
)

// blockInfo is the namenode's record of one block of a file.
type blockInfo struct {
	id       uint64
	genStamp uint64
	numBytes uint64 // committed length; 0 while the block is being written
}

// inode is a file or a directory.
type inode struct {
	id       uint64
	name     string
	parent   *inode // nil for the root
	dir      bool
	children map[string]*inode // directories only

	perm         uint32
	owner, group string
	mtime, atime int64 // milliseconds since the epoch

	// Files only.
	blocks      []blockInfo
	blockSize   uint64
	replication uint32
	leaseHolder string // client name while the file is under construction
}

func (n *inode) length() uint64 {
	var l uint64
	for _, b := range n.blocks {
		l += b.numBytes
	}
	return l
}

func (n *inode) path() string {
	if n.parent == nil {
		return "/"
	}
	var parts []string
	for ; n.parent != nil; n = n.parent {
		parts = append(parts, n.name)
	}
	var sb strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		sb.WriteByte('/')
		sb.WriteString(parts[i])
	}
	return sb.String()
}

// fileStatus is a copy of an inode's attributes, safe to use after the
// namespace lock is released.
type fileStatus struct {
	name         string // local name; empty when the caller named the path itself
	id           uint64
	dir          bool
	length       uint64
	perm         uint32
	owner, group string
	mtime, atime int64
	replication  uint32
	blockSize    uint64
	children     int
}

// locatedBlock is a block together with its offset in the file.
type locatedBlock struct {
	blockInfo
	offset uint64
}

// namespace is the namenode's in-memory file system: a tree of directories
// and files, each file a list of blocks. It does no I/O and is not safe for
// concurrent use; the namenode serialises calls with its mutex. Methods that
// change the tree take the current time as an argument. Methods that drop
// blocks return their ids so the caller can delete the replicas.
type namespace struct {
	root      *inode
	inodes    map[uint64]*inode // by inode id
	blockFile map[uint64]*inode // block id to the file holding it

	nextInodeID uint64
	nextBlockID uint64
	genStamp    uint64 // last generation stamp handed out
}

func newNamespace(now time.Time, rootOwner, rootGroup string) *namespace {
	ms := now.UnixMilli()
	root := &inode{
		id: rootInodeID, dir: true, children: map[string]*inode{},
		perm: 0o755, owner: rootOwner, group: rootGroup, mtime: ms, atime: ms,
	}
	return &namespace{
		root:        root,
		inodes:      map[uint64]*inode{root.id: root},
		blockFile:   map[uint64]*inode{},
		nextInodeID: rootInodeID + 1,
		nextBlockID: firstBlockID,
		genStamp:    firstGenStamp - 1,
	}
}

// splitPath splits an absolute HDFS path into its components. Empty
// components ("//", a trailing "/") are ignored; "." and ".." and names with
// ':' are rejected, as DFSUtil.isValidName does.
func splitPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, remoteErrorf(excInvalidPath, "Invalid path name Path is not absolute: %s", p)
	}
	var comps []string
	for _, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			continue
		case c == "." || c == ".." || strings.Contains(c, ":"):
			return nil, remoteErrorf(excInvalidPath, "Invalid path name Invalid file name: %s", p)
		}
		comps = append(comps, c)
	}
	return comps, nil
}

func joinPath(comps []string) string { return "/" + strings.Join(comps, "/") }

// walk follows comps from the root as far as they exist. It returns the
// deepest inode reached and how many components it consumed; if that is
// fewer than len(comps), the next component is missing or n is a file.
func (ns *namespace) walk(comps []string) (n *inode, consumed int) {
	n = ns.root
	for i, c := range comps {
		if !n.dir {
			return n, i
		}
		child, ok := n.children[c]
		if !ok {
			return n, i
		}
		n = child
	}
	return n, len(comps)
}

// lookup returns the inode at p, or nil if there is none.
func (ns *namespace) lookup(p string) (*inode, error) {
	comps, err := splitPath(p)
	if err != nil {
		return nil, err
	}
	n, i := ns.walk(comps)
	if i < len(comps) {
		return nil, nil
	}
	return n, nil
}

// parentDir returns the directory that is to hold the last component of
// comps, creating missing ancestors (owned by user, mode 0755) when
// createParent is set.
func (ns *namespace) parentDir(comps []string, user string, createParent bool, now int64) (*inode, error) {
	dirComps := comps[:len(comps)-1]
	n, i := ns.walk(dirComps)
	if !n.dir {
		return nil, remoteErrorf(excParentNotDirectory, "Parent path is not a directory: %s", n.path())
	}
	if i < len(dirComps) {
		if !createParent {
			return nil, remoteErrorf(excFileNotFound, "Parent directory doesn't exist: %s", joinPath(dirComps))
		}
		for _, c := range dirComps[i:] {
			n = ns.addChild(n, c, true, 0o755, user, now)
		}
	}
	return n, nil
}

func (ns *namespace) addChild(parent *inode, name string, dir bool, perm uint32, user string, now int64) *inode {
	n := &inode{
		id: ns.nextInodeID, name: name, parent: parent, dir: dir,
		perm: perm, owner: user, group: parent.group, mtime: now, atime: now,
	}
	ns.nextInodeID++
	if dir {
		n.children = map[string]*inode{}
	}
	parent.children[name] = n
	parent.mtime = now
	ns.inodes[n.id] = n
	return n
}

// detach removes n and everything below it, returning the ids of the blocks
// that went with it.
func (ns *namespace) detach(n *inode, now int64) []uint64 {
	delete(n.parent.children, n.name)
	n.parent.mtime = now
	var blocks []uint64
	var drop func(*inode)
	drop = func(n *inode) {
		delete(ns.inodes, n.id)
		for _, b := range n.blocks {
			delete(ns.blockFile, b.id)
			blocks = append(blocks, b.id)
		}
		for _, c := range n.children {
			drop(c)
		}
	}
	drop(n)
	return blocks
}

func (ns *namespace) status(n *inode, name string) fileStatus {
	st := fileStatus{
		name: name, id: n.id, dir: n.dir, perm: n.perm,
		owner: n.owner, group: n.group, mtime: n.mtime, atime: n.atime,
	}
	if n.dir {
		st.children = len(n.children)
	} else {
		st.length = n.length()
		st.replication = n.replication
		st.blockSize = n.blockSize
	}
	return st
}

// stat implements getFileInfo: ok is false if p does not exist.
func (ns *namespace) stat(p string) (st fileStatus, ok bool, err error) {
	n, err := ns.lookup(p)
	if err != nil || n == nil {
		return fileStatus{}, false, err
	}
	return ns.status(n, ""), true, nil
}

// list implements getListing: the entries of directory p whose names sort
// after startAfter, at most limit of them, and how many remain after those.
// Listing a file yields the file itself. ok is false if p does not exist.
func (ns *namespace) list(p, startAfter string, limit int) (entries []fileStatus, remaining int, ok bool, err error) {
	n, err := ns.lookup(p)
	if err != nil || n == nil {
		return nil, 0, false, err
	}
	if !n.dir {
		return []fileStatus{ns.status(n, "")}, 0, true, nil
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names) // byte order, as Hadoop compares names
	start := sort.Search(len(names), func(i int) bool { return names[i] > startAfter })
	end := min(start+limit, len(names))
	for _, name := range names[start:end] {
		entries = append(entries, ns.status(n.children[name], name))
	}
	return entries, len(names) - end, true, nil
}

// mkdirs implements mkdirs. An existing directory is not an error.
func (ns *namespace) mkdirs(p string, perm uint32, user string, createParent bool, now time.Time) error {
	comps, err := splitPath(p)
	if err != nil {
		return err
	}
	ms := now.UnixMilli()
	n, i := ns.walk(comps)
	switch {
	case i == len(comps) && n.dir:
		return nil
	case i == len(comps):
		return remoteErrorf(excFileAlreadyExists, "Path is not a directory: %s", p)
	case !n.dir:
		return remoteErrorf(excParentNotDirectory, "Parent path is not a directory: %s", n.path())
	case i < len(comps)-1 && !createParent:
		return remoteErrorf(excFileNotFound, "Parent directory doesn't exist: %s", joinPath(comps[:len(comps)-1]))
	}
	for j, c := range comps[i:] {
		mode := perm
		if i+j < len(comps)-1 {
			mode |= 0o300 // intermediate directories stay writable by their owner
		}
		n = ns.addChild(n, c, true, mode, user, ms)
	}
	return nil
}

// createArgs are the fields of CreateRequestProto the namespace uses.
type createArgs struct {
	path         string
	perm         uint32
	user         string
	clientName   string
	flag         uint32
	createParent bool
	replication  uint32
	blockSize    uint64
}

// create implements create: a new, empty file under construction, leased to
// a.clientName. With the OVERWRITE flag an existing file is replaced and its
// blocks are returned for deletion.
func (ns *namespace) create(a createArgs, now time.Time) (st fileStatus, dropped []uint64, err error) {
	comps, err := splitPath(a.path)
	if err != nil {
		return fileStatus{}, nil, err
	}
	if len(comps) == 0 {
		return fileStatus{}, nil, remoteErrorf(excFileAlreadyExists, "%s already exists as a directory", a.path)
	}
	if a.flag&createFlagAppend != 0 {
		return fileStatus{}, nil, remoteErrorf(excIO, "create with the APPEND flag is not supported by this test server")
	}
	if a.replication == 0 {
		return fileStatus{}, nil, remoteErrorf(excIO, "Requested replication factor of 0 is less than the required minimum of 1 for %s", a.path)
	}
	if a.blockSize == 0 {
		return fileStatus{}, nil, remoteErrorf(excIO, "Specified block size is less than configured minimum value: 0 < 1")
	}
	ms := now.UnixMilli()
	// Check the target before creating any parents, as Hadoop does.
	n, i := ns.walk(comps)
	if i == len(comps) {
		switch {
		case n.dir:
			return fileStatus{}, nil, remoteErrorf(excFileAlreadyExists, "%s already exists as a directory", a.path)
		case n.leaseHolder != "":
			return fileStatus{}, nil, remoteErrorf(excAlreadyBeingCreated,
				"failed to create file %s for %s because it is being written by %s", a.path, a.clientName, n.leaseHolder)
		case a.flag&createFlagOverwrite == 0:
			return fileStatus{}, nil, remoteErrorf(excFileAlreadyExists, "%s for client %s already exists", a.path, a.clientName)
		}
		dropped = ns.detach(n, ms)
	}
	parent, err := ns.parentDir(comps, a.user, a.createParent, ms)
	if err != nil {
		return fileStatus{}, nil, err
	}
	f := ns.addChild(parent, comps[len(comps)-1], false, a.perm, a.user, ms)
	f.blockSize = a.blockSize
	f.replication = a.replication
	f.leaseHolder = a.clientName
	return ns.status(f, ""), dropped, nil
}

// fileForWrite finds a file under construction by id (when non-zero, as
// Hadoop does, so that a rename during the write does not matter) or by path,
// and checks that clientName holds its lease.
func (ns *namespace) fileForWrite(p string, fileID uint64, clientName string) (*inode, error) {
	var f *inode
	if fileID != 0 {
		f = ns.inodes[fileID]
	} else {
		var err error
		if f, err = ns.lookup(p); err != nil {
			return nil, err
		}
	}
	switch {
	case f == nil:
		return nil, remoteErrorf(excFileNotFound, "File does not exist: %s (inode %d)", p, fileID)
	case f.dir:
		return nil, remoteErrorf(excFileNotFound, "Path is not a file: %s", p)
	case f.leaseHolder == "":
		return nil, remoteErrorf(excLeaseExpired, "No lease on %s: File is not open for writing.", p)
	case f.leaseHolder != clientName:
		return nil, remoteErrorf(excLeaseExpired, "Client (=%s) is not the lease owner (=%s) of %s", clientName, f.leaseHolder, p)
	}
	return f, nil
}

// addBlock implements addBlock: it commits previous (the block the client
// has just finished, with its length) and appends a fresh block to the file.
func (ns *namespace) addBlock(p string, fileID uint64, clientName string, previous *blockInfo) (locatedBlock, error) {
	f, err := ns.fileForWrite(p, fileID, clientName)
	if err != nil {
		return locatedBlock{}, err
	}
	nb := len(f.blocks)
	switch {
	case nb == 0 && previous != nil:
		return locatedBlock{}, remoteErrorf(excIO, "addBlock %s: previous block blk_%d given but the file has no blocks", p, previous.id)
	case nb > 0 && previous == nil:
		return locatedBlock{}, remoteErrorf(excIO, "addBlock %s: previous block missing", p)
	case nb > 1 && previous.id == f.blocks[nb-2].id && f.blocks[nb-1].numBytes == 0:
		// A retried addBlock: the last block was already allocated for it.
		return ns.located(f, nb-1), nil
	case nb > 0 && previous.id != f.blocks[nb-1].id:
		return locatedBlock{}, remoteErrorf(excIO, "addBlock %s: previous block blk_%d is not the last block blk_%d", p, previous.id, f.blocks[nb-1].id)
	case nb > 0:
		f.blocks[nb-1].numBytes = previous.numBytes
	}
	ns.genStamp++
	b := blockInfo{id: ns.nextBlockID, genStamp: ns.genStamp}
	ns.nextBlockID++
	f.blocks = append(f.blocks, b)
	ns.blockFile[b.id] = f
	return ns.located(f, nb), nil
}

func (ns *namespace) located(f *inode, i int) locatedBlock {
	var off uint64
	for _, b := range f.blocks[:i] {
		off += b.numBytes
	}
	return locatedBlock{blockInfo: f.blocks[i], offset: off}
}

// updateBlockForPipeline implements updateBlockForPipeline. As in Hadoop it
// hands out a new generation stamp without changing the stored block (that
// would take updatePipeline, which this server does not implement); the
// client calls it after every block and ignores the answer.
func (ns *namespace) updateBlockForPipeline(blockID uint64, clientName string) (locatedBlock, error) {
	f := ns.blockFile[blockID]
	if f == nil || f.leaseHolder == "" {
		return locatedBlock{}, remoteErrorf(excIO, "blk_%d does not exist or is not under Construction", blockID)
	}
	if f.leaseHolder != clientName {
		return locatedBlock{}, remoteErrorf(excLeaseExpired, "Client (=%s) is not the lease owner (=%s) of %s", clientName, f.leaseHolder, f.path())
	}
	for i, b := range f.blocks {
		if b.id == blockID {
			lb := ns.located(f, i)
			ns.genStamp++
			lb.genStamp = ns.genStamp
			return lb, nil
		}
	}
	return locatedBlock{}, remoteErrorf(excIO, "blk_%d does not exist or is not under Construction", blockID)
}

// complete implements complete: it commits last, then closes the file if
// every block has a finalized replica of its committed length (replicaOK
// says so). Otherwise it reports false and the file stays open, as Hadoop
// does while blocks are not yet minimally replicated. A last block of zero
// bytes is dropped: the client allocates a block whenever it fills one, even
// if no byte follows, and never writes it.
func (ns *namespace) complete(p string, fileID uint64, clientName string, last *blockInfo,
	replicaOK func(id, numBytes uint64) bool, now time.Time) (done bool, dropped []uint64, err error) {
	if fileID != 0 {
		if f := ns.inodes[fileID]; f != nil && !f.dir && f.leaseHolder == "" {
			return true, nil, nil // retried complete of a closed file
		}
	} else if f, _ := ns.lookup(p); f != nil && !f.dir && f.leaseHolder == "" {
		return true, nil, nil
	}
	f, err := ns.fileForWrite(p, fileID, clientName)
	if err != nil {
		return false, nil, err
	}
	nb := len(f.blocks)
	if last != nil {
		if nb == 0 || f.blocks[nb-1].id != last.id {
			return false, nil, remoteErrorf(excIO, "complete %s: blk_%d is not the last block of the file", p, last.id)
		}
		f.blocks[nb-1].numBytes = last.numBytes
		if last.numBytes == 0 {
			delete(ns.blockFile, last.id)
			dropped = append(dropped, last.id)
			f.blocks = f.blocks[:nb-1]
		}
	}
	for _, b := range f.blocks {
		if !replicaOK(b.id, b.numBytes) {
			return false, dropped, nil
		}
	}
	f.leaseHolder = ""
	f.mtime = now.UnixMilli()
	return true, dropped, nil
}

// delete implements delete. It reports false if p does not exist, or is the
// root (which Hadoop refuses to delete).
func (ns *namespace) delete(p string, recursive bool, now time.Time) (ok bool, dropped []uint64, err error) {
	n, err := ns.lookup(p)
	if err != nil || n == nil {
		return false, nil, err
	}
	if n.dir && !recursive && len(n.children) > 0 {
		return false, nil, remoteErrorf(excPathIsNotEmptyDir, "`%s is non empty': Directory is not empty", p)
	}
	if n.parent == nil {
		return false, nil, nil
	}
	return true, ns.detach(n, now.UnixMilli()), nil
}

// rename implements rename2 (the rename with options of FSDirRenameOp).
func (ns *namespace) rename(src, dst string, overwrite bool, now time.Time) (dropped []uint64, err error) {
	srcComps, err := splitPath(src)
	if err != nil {
		return nil, err
	}
	dstComps, err := splitPath(dst)
	if err != nil {
		return nil, err
	}
	s, i := ns.walk(srcComps)
	switch {
	case i < len(srcComps):
		return nil, remoteErrorf(excFileNotFound, "rename source %s is not found.", src)
	case s.parent == nil:
		return nil, remoteErrorf(excIO, "rename source cannot be the root")
	case len(dstComps) == 0:
		return nil, remoteErrorf(excIO, "rename destination cannot be the root")
	case joinPath(srcComps) == joinPath(dstComps):
		return nil, remoteErrorf(excFileAlreadyExists, "The source %s and destination %s are the same", src, dst)
	case strings.HasPrefix(joinPath(dstComps), joinPath(srcComps)+"/"):
		return nil, remoteErrorf(excIO, "Rename destination %s is a directory or file under source %s", dst, src)
	}
	parentComps := dstComps[:len(dstComps)-1]
	dp, j := ns.walk(parentComps)
	switch {
	case !dp.dir:
		return nil, remoteErrorf(excParentNotDirectory, "rename destination parent %s is a file.", dp.path())
	case j < len(parentComps):
		return nil, remoteErrorf(excFileNotFound, "rename destination parent %s not found.", joinPath(parentComps))
	}
	ms := now.UnixMilli()
	name := dstComps[len(dstComps)-1]
	if d, exists := dp.children[name]; exists {
		switch {
		case d.dir != s.dir:
			return nil, remoteErrorf(excIO, "Source %s and destination %s must both be directories or both be files", src, dst)
		case !overwrite:
			return nil, remoteErrorf(excFileAlreadyExists, "rename destination %s already exists", dst)
		case d.dir && len(d.children) > 0:
			return nil, remoteErrorf(excIO, "rename destination directory is not empty: %s", dst)
		}
		dropped = ns.detach(d, ms)
	}
	delete(s.parent.children, s.name)
	s.parent.mtime = ms
	s.name = name
	s.parent = dp
	dp.children[name] = s
	dp.mtime = ms
	return dropped, nil
}

// fileLocations is the answer to getBlockLocations.
type fileLocations struct {
	length            uint64
	blocks            []locatedBlock // the blocks in the requested range
	last              *locatedBlock  // the file's last block; nil if none
	underConstruction bool
}

// blockLocations implements getBlockLocations: the blocks overlapping
// [offset, offset+length), or the one holding offset when length is 0.
func (ns *namespace) blockLocations(p string, offset, length uint64) (fileLocations, error) {
	f, err := ns.lookup(p)
	switch {
	case err != nil:
		return fileLocations{}, err
	case f == nil:
		return fileLocations{}, remoteErrorf(excFileNotFound, "File does not exist: %s", p)
	case f.dir:
		return fileLocations{}, remoteErrorf(excFileNotFound, "Path is not a file: %s", p)
	}
	var blocks []locatedBlock
	end := offset + length
	if end < offset {
		end = math.MaxUint64
	}
	var pos uint64
	for _, b := range f.blocks {
		bEnd := pos + b.numBytes
		overlaps := pos < end && bEnd > offset
		holds := length == 0 && pos <= offset && offset < bEnd
		if overlaps || holds {
			blocks = append(blocks, locatedBlock{blockInfo: b, offset: pos})
		}
		pos = bEnd
	}
	fl := fileLocations{length: pos, blocks: blocks, underConstruction: f.leaseHolder != ""}
	if n := len(f.blocks); n > 0 {
		last := ns.located(f, n-1)
		fl.last = &last
	}
	return fl, nil
}

// setPermission, setOwner and setTimes implement the attribute setters.
func (ns *namespace) setPermission(p string, perm uint32) error {
	n, err := ns.existing(p)
	if err == nil {
		n.perm = perm
	}
	return err
}

func (ns *namespace) setOwner(p, user, group string) error {
	n, err := ns.existing(p)
	if err != nil {
		return err
	}
	if user != "" {
		n.owner = user
	}
	if group != "" {
		n.group = group
	}
	return nil
}

// setTimes sets the times in milliseconds; -1 (as uint64) leaves one as is.
func (ns *namespace) setTimes(p string, mtime, atime uint64) error {
	n, err := ns.existing(p)
	if err != nil {
		return err
	}
	if mtime != math.MaxUint64 {
		n.mtime = int64(mtime)
	}
	if atime != math.MaxUint64 {
		n.atime = int64(atime)
	}
	return nil
}

func (ns *namespace) existing(p string) (*inode, error) {
	n, err := ns.lookup(p)
	if err == nil && n == nil {
		err = remoteErrorf(excFileNotFound, "File does not exist: %s", p)
	}
	return n, err
}

// contentSummary is the subset of ContentSummaryProto this server fills in.
type contentSummary struct {
	length, files, dirs, spaceConsumed uint64
}

func (ns *namespace) contentSummary(p string) (contentSummary, error) {
	n, err := ns.existing(p)
	if err != nil {
		return contentSummary{}, err
	}
	var cs contentSummary
	var walk func(*inode)
	walk = func(n *inode) {
		if n.dir {
			cs.dirs++
			for _, c := range n.children {
				walk(c)
			}
			return
		}
		l := n.length()
		cs.files++
		cs.length += l
		cs.spaceConsumed += l * uint64(n.replication)
	}
	walk(n)
	return cs, nil
}

// fileBlocks returns the blocks of the file at p, for the Server's
// inspection helpers.
func (ns *namespace) fileBlocks(p string) ([]locatedBlock, error) {
	n, err := ns.lookup(p)
	if err != nil {
		return nil, err
	}
	if n == nil || n.dir {
		return nil, ErrNotExist
	}
	out := make([]locatedBlock, len(n.blocks))
	for i := range n.blocks {
		out[i] = ns.located(n, i)
	}
	return out, nil
}
