package shard

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/stream"
	"github.com/xdlgo/xps/ams/tier"
	"github.com/xdlgo/xps/filters"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
)

// Options configure a Shard. The zero value is usable.
type Options struct {
	// ID names the shard in stats and logs. The default value is "ams".
	ID string
	// Stripes is the number of stripe owners. The default value is
	// runtime.GOMAXPROCS(0).
	Stripes int
	// Version is the cluster version the shard serves. The default value is
	// 1, or none with Blank.
	Version uint64
	// Blank starts the shard serving no version: it refuses every request
	// (ams.ErrStaleVersion) until a restore starts one (Restore, or Begin
	// at a new cluster's birth, both ordered by the scheduler). A cluster
	// member starts blank, so that a process restarted under a live id,
	// empty, takes no part in the version its predecessor served.
	Blank bool
	// Now is the clock for row statistics. The default value is time.Now.
	Now func() time.Time
	// Expire is the embedder's expiry rule, asked of every row a sweep
	// visits that the table's own rules keep (filters.ExpireFunc): true
	// expires it, within the table's cap per lap. It runs on the stripe
	// owners, several at once, and must be safe for that. The default
	// value is nil: the tables' rules alone.
	Expire filters.ExpireFunc
	// Partitions is the model's number of virtual partitions until a
	// begin or a restore gives the shard map's (ams.ShardMap.Partitions):
	// stripes are chosen by partition, so that the admission filter state
	// of a partition lives in one stripe. The default value is
	// ams.DefaultPartitions.
	Partitions int
	// Stores are the roots of the snapshot and export stores the RPCs
	// may name (WriteSnapshot, Restore, WriteExport): directories and
	// hdfs://HOST:PORT/PATH URIs. A location is used only if it is a root
	// or lies under one once cleaned (a directory made absolute, with its
	// symbolic links resolved; an HDFS URI on the root's namenode
	// address); any other is refused with ams.ErrStoreNotAllowed before
	// anything is created or opened. Relative directories are taken
	// against the working directory when the shard starts. Calls of the
	// Go API with a snapshot.Store (Shard.WriteSnapshot, ...) are not
	// checked: the caller opened the store. The default value is none:
	// every location is refused.
	Stores []string
	// TierDirs are the directories where the shard may keep the cold
	// tiers of tiered tables (ams.TableSpec.Storage): a table's TierDir
	// must be one or lie under one (checked as Stores are), and a table
	// that names none uses the first. The shard keeps each in a
	// subdirectory named by its ID, whose contents it discards when it
	// opens it (a restarted shard restores from a snapshot). The default
	// value is none: a tiered table is refused.
	TierDirs []string
	// CheckState, when set, checks every entry a PutState stores (not a
	// deletion) against its protocol before anything is stored: the
	// embedder's decoder of what its keys hold (amsnode gives
	// checkpoint.CheckEntry, so that a value under a checkpoint key that
	// is no checkpoint is refused instead of failing every later
	// snapshot). An error refuses the whole call with ams.ErrBadRequest.
	// The default value (nil) checks the limits only.
	CheckState func(key string, value []byte) error
}

// MaxStripes bounds Options.Stripes: a stripe is a goroutine and a share
// of every table, and more than a few per core only adds overhead.
const MaxStripes = 1024

// Validate reports settings no shard can run with: Stripes negative or
// above MaxStripes (0 is the default, GOMAXPROCS), Partitions out of
// range, a store root empty or a malformed hdfs:// URI.
func (o Options) Validate() error {
	if o.Stripes < 0 || o.Stripes > MaxStripes {
		return fmt.Errorf("%w: %d stripes: give 1 to %d (0: one per core)", ams.ErrBadSpec, o.Stripes, MaxStripes)
	}
	if o.Partitions < 0 || o.Partitions > ams.MaxPartitions {
		return fmt.Errorf("%w: %d partitions: give 1 to %d (0: %d)", ams.ErrBadSpec, o.Partitions, ams.MaxPartitions, ams.DefaultPartitions)
	}
	_, err := parseStoreRoots(o.Stores)
	_, terr := parseStoreRoots(o.TierDirs)
	for _, d := range o.TierDirs {
		if hdfsconn.IsURI(d) {
			terr = errors.Join(terr, fmt.Errorf("%w: tier directory %q: a cold tier is on local disk, not HDFS", ams.ErrBadSpec, d))
		}
	}
	return errors.Join(err, terr)
}

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.ID == "" {
		o.ID = "ams"
	}
	if o.Stripes <= 0 {
		o.Stripes = runtime.GOMAXPROCS(0)
	}
	if o.Version == 0 && !o.Blank {
		o.Version = ams.DefaultVersion
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Partitions <= 0 {
		o.Partitions = ams.DefaultPartitions
	}
}

// tableInfo describes a declared table; immutable once published.
type tableInfo struct {
	idx  int
	spec ams.TableSpec
	salt uint64
	// tier is a tiered table's cold tier store, nil for a table in memory.
	tier *tier.Store
}

// denseInfo describes a declared dense range; immutable once published.
type denseInfo struct {
	spec   ams.DenseSpec
	lo, hi int
	stripe int
}

// catalog is the immutable set of declarations, replaced on Declare, and
// the partition count its tables' stripes are chosen by, replaced with
// them by a reset.
type catalog struct {
	tables     map[string]*tableInfo
	dense      map[string]*denseInfo
	partitions int
}

// newCatalog returns an empty catalog over the given partitions.
func newCatalog(partitions int) *catalog {
	return &catalog{tables: map[string]*tableInfo{}, dense: map[string]*denseInfo{}, partitions: partitions}
}

// stripeOf picks the stripe of id in table ti among n: by the id's
// virtual partition (ams.Partition), so that a partition's rows and its
// admission filter state live in one stripe.
func (c *catalog) stripeOf(ti *tableInfo, id uint64, n int) int {
	return partitionStripe(ams.SaltedPartition(ti.salt, id, c.partitions), n)
}

// partitionStripe is the stripe, among n, of a virtual partition's rows.
func partitionStripe(p uint32, n int) int { return int(p % uint32(n)) }

// Shard is one AMS shard. Its methods are safe for concurrent use.
type Shard struct {
	opts    Options
	stripes []*stripe
	cat     atomic.Pointer[catalog]
	// version is the cluster version served: it starts at Options.Version
	// (0, none, when Blank) and is raised by a restore or a begin
	// (advanceVersion, then reset, which gives it to every stripe).
	version atomic.Uint64

	declareMu sync.Mutex // serialises Declare; never taken by pull or push
	restoreMu sync.Mutex // serialises restores (the Restore RPC)
	// modelMu is held for writing by Begin and Restore, which replace the
	// model (reset), and for reading by WriteSnapshot and WriteExport,
	// which read it in many owner tasks: neither sees a model half
	// replaced. (A snapshot whose RPC the scheduler abandoned still runs
	// on the shard when the scheduler restores it: the restore waits for
	// it.) Taken before exportMu; never by pull or push.
	modelMu sync.RWMutex

	stateMu sync.Mutex        // guards state; never taken by pull or push
	state   map[string][]byte // PutState's entries

	// syncMu guards sync (sync mode's rounds; see syncround.go); it is
	// taken before stateMu, never after, and never by async pull or push.
	syncMu sync.Mutex
	sync   *syncRounds

	// appliedMu guards applied, the records of applied pushes by worker
	// (applied.go): taken once per push that names its batch, for a map
	// lookup and a range update, never by a stripe owner.
	appliedMu sync.Mutex
	applied   map[string]*ams.Applied
	// clock is the sample clock: the sum of the records' samples, changed
	// under appliedMu, read without it (Samples).
	clock atomic.Uint64

	// exportMu serialises exports and guards export (export.go); never
	// taken by pull or push.
	exportMu sync.Mutex
	export   exportState

	// stores are Options.Stores, cleaned by New; immutable.
	stores storeRoots
	// tiers are the cold tier stores of tiered tables (tiered.go).
	tiers tiers

	pulls, pushes, rowsPulled, rowsPushed atomic.Uint64

	// calls pools the workspaces of pulls and pushes (call).
	calls sync.Pool

	done    chan struct{}
	closing sync.Once
	wg      sync.WaitGroup
}

// New starts a shard and its stripe owners. Close stops them. A store
// root that Options.Validate reports is left out (it allows nothing).
func New(opts Options) *Shard {
	opts.EnsureDefaults()
	s := &Shard{opts: opts, done: make(chan struct{}), applied: map[string]*ams.Applied{}}
	s.stores, _ = parseStoreRoots(opts.Stores)
	s.tiers.roots, _ = parseStoreRoots(opts.TierDirs)
	s.version.Store(opts.Version)
	s.cat.Store(newCatalog(opts.Partitions))
	s.calls.New = func() any { return newCall(opts.Stripes) }
	s.stripes = make([]*stripe, opts.Stripes)
	for i := range s.stripes {
		// Unbuffered: a send succeeds only when the owner takes the task,
		// so every task sent is served even if Close races with it.
		st := &stripe{in: make(chan *task), dense: map[string]*ams.DenseVar{}, version: s.version.Load(),
			i: i, n: opts.Stripes, hook: opts.Expire, now: s.now, step: s.step}
		s.stripes[i] = st
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			st.run(s.done)
		}()
	}
	return s
}

// Close stops the stripe owners and waits for them. Requests in flight
// fail with ams.ErrClosed.
func (s *Shard) Close() error {
	s.closing.Do(func() { close(s.done) })
	s.wg.Wait()
	return s.tiers.close()
}

// ID returns the shard's ID.
func (s *Shard) ID() string { return s.opts.ID }

// Version returns the cluster version the shard serves.
func (s *Shard) Version() uint64 { return s.version.Load() }

// checkVersion refuses a request whose version is not the shard's.
func (s *Shard) checkVersion(v uint64) error {
	if cur := s.version.Load(); v != cur {
		return fmt.Errorf("%w: request version %d, shard %s serves %d", ams.ErrStaleVersion, v, s.opts.ID, cur)
	}
	return nil
}

// advanceVersion makes the shard serve version v from now on, refusing
// every request of an older one; v below the current version is refused.
// A restore calls it first, so that nothing of the version it replaces
// is applied after it started.
func (s *Shard) advanceVersion(v uint64) error {
	for {
		cur := s.version.Load()
		if v < cur {
			return fmt.Errorf("%w: request version %d, shard %s serves %d", ams.ErrStaleVersion, v, s.opts.ID, cur)
		}
		if s.version.CompareAndSwap(cur, v) {
			return nil
		}
	}
}

func (s *Shard) now() uint32 { return uint32(s.opts.Now().Unix()) }

// step returns the sample clock in ams.StepUnit units, modulo 2^32.
func (s *Shard) step() uint32 { return uint32(s.clock.Load() / ams.StepUnit) }

// Samples returns the shard's sample clock: the samples of every push it
// applied that named its batch (ams.Origin.Samples), as its records of
// applied pushes hold them (restored with them). Every push of a worker's
// batch reaches every shard (each holds a range of the dense gradient),
// so the clocks of the shards agree whenever the workers are paused.
func (s *Shard) Samples() uint64 { return s.clock.Load() }

// dispatch sends one task to each stripe that has work and waits for all.
func (s *Shard) dispatch(tasks []*task) error {
	var wg sync.WaitGroup
	return s.dispatchWG(tasks, &wg)
}

// dispatchWG is dispatch waiting on wg, which the caller may reuse once
// it returns (a call's).
func (s *Shard) dispatchWG(tasks []*task, wg *sync.WaitGroup) error {
	select {
	case <-s.done:
		return ams.ErrClosed
	default:
	}
	for i, t := range tasks {
		if t == nil {
			continue
		}
		t.wg = wg
		wg.Add(1)
		select {
		case s.stripes[i].in <- t:
		case <-s.done:
			wg.Done()
			wg.Wait()
			return ams.ErrClosed
		}
	}
	wg.Wait()
	var errs []error
	for _, t := range tasks {
		if t != nil && t.err != nil {
			errs = append(errs, t.err)
		}
	}
	return errors.Join(errs...)
}

// call is the workspace of one pull or push on the stripe owners: a task
// per stripe with its parts' id and position lists, the list dispatch
// sends, the WaitGroup it waits on, and the dense ranges of a Local
// call. Calls are pooled (Shard.calls): a request takes one and gives it
// back once its dispatches returned, when no stripe owner holds any of
// its tasks, so that a shard serving batches of about the same size
// allocates nothing per request.
type call struct {
	tasks []task  // by stripe: the rows' parts
	dense task    // the one task of a dense range
	sent  []*task // by stripe: what dispatch sends (nil: nothing)
	wg    sync.WaitGroup
	infos []*denseInfo // Local's dense vectors, in request order
	grads []denseGrad  // Local's dense gradients

	values []int          // a stream pull's reply shape: row values by table
	ranges []stream.Range // and dense ranges by vector
}

func newCall(stripes int) *call {
	return &call{tasks: make([]task, stripes), sent: make([]*task, stripes)}
}

func (s *Shard) getCall() *call { return s.calls.Get().(*call) }

// callKeepBytes bounds the id and position lists of a call the pool
// keeps: a call that served a larger request is left to the garbage
// collector, so that a burst of huge requests leaves nothing behind once
// collected (a sync.Pool keeps what it holds past one collection). 4 MiB
// is for a batch of 5000 at the XDL model's 18 unique ids a sample
// (about 46,000 ids a shard): at 1 MiB the shards of such a job
// allocated 129 objects a batch, at 4 MiB 91 (one run each).
const callKeepBytes = 4 << 20

// putCall returns c to the pool, keeping its lists but none of the
// request's buffers, unless its lists are over callKeepBytes.
func (s *Shard) putCall(c *call) {
	size := 0
	for i := range c.tasks {
		parts := c.tasks[i].parts
		for j := range parts[:cap(parts)] {
			p := &parts[:cap(parts)][j]
			p.buf = nil
			size += 8*cap(p.ids) + 4*cap(p.pos)
		}
	}
	if size > callKeepBytes {
		return
	}
	c.dense.denseBuf = nil
	clear(c.infos)
	c.infos = c.infos[:0]
	clear(c.grads)
	c.grads = c.grads[:0]
	c.values, c.ranges = c.values[:0], c.ranges[:0]
	s.calls.Put(c)
}

// TableSpec returns the spec of a declared table.
func (s *Shard) TableSpec(name string) (ams.TableSpec, error) {
	ti, ok := s.cat.Load().tables[name]
	if !ok {
		return ams.TableSpec{}, fmt.Errorf("%w: %q", ams.ErrUnknownTable, name)
	}
	return ti.spec, nil
}

// DenseDecl declares the shard's range [Lo, Hi) of a dense vector.
type DenseDecl struct {
	Spec   ams.DenseSpec
	Lo, Hi int
	// Init holds the initial values of [Lo, Hi); used only on creation.
	Init []float32
}

// check validates a dense declaration whose spec has its defaults: its
// spec, its range within the vector and ams.MaxDenseValues, and its
// initial values' count and finiteness.
func (d *DenseDecl) check() error {
	if err := d.Spec.Validate(); err != nil {
		return fmt.Errorf("ams: declare dense %q: %w", d.Spec.Name, err)
	}
	if d.Lo < 0 || d.Hi < d.Lo || d.Hi > d.Spec.Size {
		return fmt.Errorf("%w: dense %q range [%d,%d) of size %d", ams.ErrBadRequest, d.Spec.Name, d.Lo, d.Hi, d.Spec.Size)
	}
	if d.Hi-d.Lo > ams.MaxDenseValues {
		return fmt.Errorf("%w: dense %q: the shard's range [%d,%d) has more than %d values (ams.MaxDenseValues): use more shards",
			ams.ErrTooLarge, d.Spec.Name, d.Lo, d.Hi, ams.MaxDenseValues)
	}
	if d.Init != nil && len(d.Init) != d.Hi-d.Lo {
		return fmt.Errorf("%w: dense %q: %d initial values for range [%d,%d)", ams.ErrBadRequest, d.Spec.Name, len(d.Init), d.Lo, d.Hi)
	}
	return ams.CheckFinite(fmt.Sprintf("declare dense %q: initial values", d.Spec.Name), nil, d.Init, 0)
}

// Declare creates tables and dense ranges. Existing identical declarations
// are kept as they are (their rows and values untouched); a declaration
// that differs from an existing one fails with ams.ErrConflict. It returns the
// names it created.
func (s *Shard) Declare(version uint64, tables []ams.TableSpec, dense []DenseDecl) ([]string, error) {
	s.declareMu.Lock()
	defer s.declareMu.Unlock()
	if err := s.checkVersion(version); err != nil {
		return nil, err
	}
	old := s.cat.Load()
	next := &catalog{tables: make(map[string]*tableInfo, len(old.tables)+len(tables)),
		dense: make(map[string]*denseInfo, len(old.dense)+len(dense)), partitions: old.partitions}
	for k, v := range old.tables {
		next.tables[k] = v
	}
	for k, v := range old.dense {
		next.dense[k] = v
	}
	var created []string
	tasks := make([]*task, len(s.stripes))
	for _, spec := range tables {
		spec.EnsureDefaults()
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("ams: declare table %q: %w", spec.Name, err)
		}
		if ti, ok := next.tables[spec.Name]; ok {
			if ti.spec != spec {
				return nil, fmt.Errorf("%w: table %q is %+v, declared again as %+v", ams.ErrConflict, spec.Name, ti.spec, spec)
			}
			continue
		}
		ti := &tableInfo{idx: len(next.tables), spec: spec, salt: ams.TableHash(spec.Name)}
		if spec.Tiered() {
			store, err := s.tiers.storeFor(s.opts.ID, spec)
			if err != nil {
				return nil, fmt.Errorf("ams: declare table %q: %w", spec.Name, err)
			}
			ti.tier = store
		}
		next.tables[spec.Name] = ti
		created = append(created, spec.Name)
		for i := range tasks {
			if tasks[i] == nil {
				tasks[i] = &task{op: opDeclare, partitions: next.partitions}
			}
			tasks[i].declTables = append(tasks[i].declTables, ti)
		}
	}
	for _, d := range dense {
		d.Spec.EnsureDefaults()
		if err := d.check(); err != nil {
			return nil, err
		}
		if di, ok := next.dense[d.Spec.Name]; ok {
			if di.spec != d.Spec || di.lo != d.Lo || di.hi != d.Hi {
				return nil, fmt.Errorf("%w: dense %q", ams.ErrConflict, d.Spec.Name)
			}
			continue
		}
		di := &denseInfo{spec: d.Spec, lo: d.Lo, hi: d.Hi, stripe: int(ams.TableHash(d.Spec.Name) % uint64(len(s.stripes)))}
		next.dense[d.Spec.Name] = di
		created = append(created, d.Spec.Name)
		if tasks[di.stripe] == nil {
			tasks[di.stripe] = &task{op: opDeclare, partitions: next.partitions}
		}
		tasks[di.stripe].declDense = append(tasks[di.stripe].declDense, denseDecl{info: di, init: d.Init})
	}
	if err := s.dispatch(tasks); err != nil {
		return nil, err
	}
	s.cat.Store(next)
	return created, nil
}

// checkRows checks that r's Rows and Pos fit its IDs at dim.
func checkRows(r *ams.TableRequest, dim int) error {
	if r.Pos == nil {
		if len(r.Rows) != len(r.IDs)*dim {
			return fmt.Errorf("%w: table %q: %d values for %d ids of dim %d", ams.ErrBadRequest, r.Table, len(r.Rows), len(r.IDs), dim)
		}
		return nil
	}
	if len(r.Pos) != len(r.IDs) || dim == 0 || len(r.Rows)%dim != 0 {
		return fmt.Errorf("%w: table %q: %d positions and %d values for %d ids of dim %d", ams.ErrBadRequest, r.Table, len(r.Pos), len(r.Rows), len(r.IDs), dim)
	}
	n := int32(len(r.Rows) / dim)
	for _, p := range r.Pos {
		if p < 0 || p >= n {
			return fmt.Errorf("%w: table %q: position %d outside a buffer of %d rows", ams.ErrBadRequest, r.Table, p, n)
		}
	}
	return nil
}

// split checks reqs (their tables, buffers and the request limits) and
// builds in c one task per stripe that has ids, for the given op; it
// returns the tasks to dispatch (c.sent) and the rows.
func (s *Shard) split(c *call, op opKind, version uint64, reqs []ams.TableRequest, create bool) ([]*task, int, error) {
	cat := s.cat.Load()
	rows, values := 0, 0
	for ri, r := range reqs {
		ti, ok := cat.tables[r.Table]
		if !ok {
			return nil, 0, fmt.Errorf("%w: %q", ams.ErrUnknownTable, r.Table)
		}
		if err := checkRows(&reqs[ri], ti.spec.Dim); err != nil {
			return nil, 0, err
		}
		rows += len(r.IDs)
		values += len(r.IDs) * ti.spec.Dim
	}
	if err := ams.CheckRequestSize(rows, values, 0); err != nil {
		if op == opPull {
			return nil, 0, fmt.Errorf("pull: %w", err)
		}
		return nil, 0, fmt.Errorf("push: %w", err)
	}
	now, step := s.now(), s.step()
	for i := range c.tasks {
		t := &c.tasks[i]
		t.op, t.version, t.create, t.now, t.step, t.err = op, version, create, now, step, nil
		t.parts = resize(t.parts, len(reqs))
		c.sent[i] = nil
	}
	for ri, r := range reqs {
		ti := cat.tables[r.Table]
		hint := len(r.IDs)/len(s.stripes) + 8
		for i := range c.tasks {
			p := &c.tasks[i].parts[ri]
			p.table, p.buf = ti.idx, r.Rows
			p.ids, p.pos = resize(p.ids, hint)[:0], resize(p.pos, hint)[:0]
		}
		for k, id := range r.IDs {
			si := cat.stripeOf(ti, id, len(s.stripes))
			t := &c.tasks[si]
			c.sent[si] = t
			p := &t.parts[ri]
			p.ids = append(p.ids, id)
			if r.Pos != nil {
				p.pos = append(p.pos, r.Pos[k])
			} else {
				p.pos = append(p.pos, int32(k))
			}
		}
	}
	return c.sent, rows, nil
}

// resize returns b with length n, reallocated only when its capacity is
// short.
func resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// Pull fills each request's Rows with the rows of its IDs. With create,
// missing rows are created by the table's initializer; without it they
// read as zeros and are not created.
func (s *Shard) Pull(version uint64, reqs []ams.TableRequest, create bool) error {
	c := s.getCall()
	defer s.putCall(c)
	return s.pull(c, version, reqs, create)
}

// pull is Pull in the workspace c.
func (s *Shard) pull(c *call, version uint64, reqs []ams.TableRequest, create bool) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	tasks, rows, err := s.split(c, opPull, version, reqs, create)
	if err != nil {
		return err
	}
	if err := s.dispatchWG(tasks, &c.wg); err != nil {
		return err
	}
	s.pulls.Add(1)
	s.rowsPulled.Add(uint64(rows))
	return nil
}

// Push applies each request's Rows as gradients of its IDs with the table's
// optimizer. Missing rows are created first.
func (s *Shard) Push(version uint64, reqs []ams.TableRequest) error {
	return s.apply(version, ams.Origin{}, reqs, nil)
}

// denseGrad is the gradient of a shard's range of a dense vector.
type denseGrad struct {
	di   *denseInfo
	grad []float32 // hi-lo values
}

// apply applies one push: every table request's Rows as gradients, then
// every dense range's gradient. It checks the tables' requests, then
// claims origin's batch (claim: a batch already applied is refused), and
// only then dispatches; the caller has checked the dense gradients.
func (s *Shard) apply(version uint64, origin ams.Origin, reqs []ams.TableRequest, dense []denseGrad) error {
	c := s.getCall()
	defer s.putCall(c)
	return s.applyIn(c, version, origin, reqs, dense)
}

// applyIn is apply in the workspace c.
func (s *Shard) applyIn(c *call, version uint64, origin ams.Origin, reqs []ams.TableRequest, dense []denseGrad) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	var tasks []*task
	rows := 0
	if len(reqs) > 0 {
		var err error
		if tasks, rows, err = s.split(c, opPush, version, reqs, true); err != nil {
			return err
		}
	}
	if err := s.claim(version, origin); err != nil {
		return err
	}
	step := s.step() // the clock with this push's samples
	for _, t := range tasks {
		if t != nil {
			t.step = step
		}
	}
	if len(reqs) > 0 {
		if err := s.dispatchWG(tasks, &c.wg); err != nil {
			return err
		}
		s.pushes.Add(1)
		s.rowsPushed.Add(uint64(rows))
	}
	for _, d := range dense {
		if err := s.denseTask(c, d.di, opDensePush, version, d.grad); err != nil {
			return err
		}
	}
	return nil
}

// checkDense reports whether name is a declared dense vector whose shard
// range has n values.
func (s *Shard) checkDense(name string, n int) error {
	_, err := s.denseInfo(name, n)
	return err
}

func (s *Shard) denseInfo(name string, n int) (*denseInfo, error) {
	di, ok := s.cat.Load().dense[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ams.ErrUnknownDense, name)
	}
	if n >= 0 && n != di.hi-di.lo {
		return nil, fmt.Errorf("%w: dense %q: %d values for range [%d,%d)", ams.ErrBadRequest, name, n, di.lo, di.hi)
	}
	return di, nil
}

// denseTask sends op of version with buf (len hi-lo) to the stripe that
// owns the vector, as c's dense task.
func (s *Shard) denseTask(c *call, di *denseInfo, op opKind, version uint64, buf []float32) error {
	clear(c.sent)
	c.dense = task{op: op, version: version, dense: di.spec.Name, denseBuf: buf}
	c.sent[di.stripe] = &c.dense
	return s.dispatchWG(c.sent, &c.wg)
}

// PullDense returns the shard's range [lo, hi) of a dense vector, copied. A
// vector declared without initial values fails with ams.ErrNotInitialized.
func (s *Shard) PullDense(version uint64, name string) (lo, hi int, values []float32, err error) {
	if err := s.checkVersion(version); err != nil {
		return 0, 0, nil, err
	}
	di, err := s.denseInfo(name, -1)
	if err != nil {
		return 0, 0, nil, err
	}
	values = make([]float32, di.hi-di.lo)
	c := s.getCall()
	defer s.putCall(c)
	if err := s.denseTask(c, di, opDensePull, version, values); err != nil {
		return 0, 0, nil, err
	}
	return di.lo, di.hi, values, nil
}

// PushDense applies grad, the gradient of the shard's range, with the
// vector's optimizer.
func (s *Shard) PushDense(version uint64, name string, grad []float32) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	di, err := s.denseInfo(name, len(grad))
	if err != nil {
		return err
	}
	return s.apply(version, ams.Origin{}, nil, []denseGrad{{di, grad}})
}

// TableStats describes one table on the shard.
type TableStats = ams.TableUsage

// tableStats returns the stats of one stripe's table.
func tableStats(tab *ams.Table, l *life) TableStats {
	ts := TableStats{Name: tab.Spec().Name, Rows: int64(tab.Len()), MemoryBytes: tab.MemoryBytes(),
		RowBytes: int64(tab.Len() * tab.RowBytes()), Counters: tab.Counters()}
	if l != nil && l.cold != nil {
		ts.Tier = l.cold.usageNow()
	}
	if f := tab.Filter(); f != nil {
		ts.FilterBytes = int64(f.MemoryBytes())
	}
	return ts
}

// Stats describes the shard.
type Stats struct {
	ID                     string
	Version                uint64
	Tables                 []TableStats
	Pulls, Pushes          uint64
	RowsPulled, RowsPushed uint64
	// Applied is the shard's records of applied pushes, by worker (see
	// ams.Origin).
	Applied map[string]*ams.Applied
	// Tiers are the cold tier stores of the shard's tiered tables.
	Tiers []TierStats
	// Dense is the figures of the shard's dense ranges, by name.
	Dense []ams.DenseUsage
}

// Stats collects table sizes from every stripe owner and the counters.
func (s *Shard) Stats() (Stats, error) {
	cat := s.cat.Load()
	tasks := make([]*task, len(s.stripes))
	for i := range tasks {
		tasks[i] = &task{op: opStats, stats: make([]TableStats, len(cat.tables))}
	}
	if err := s.dispatch(tasks); err != nil {
		return Stats{}, err
	}
	st := Stats{ID: s.opts.ID, Version: s.version.Load(), Tables: make([]TableStats, len(cat.tables)),
		Pulls: s.pulls.Load(), Pushes: s.pushes.Load(), RowsPulled: s.rowsPulled.Load(), RowsPushed: s.rowsPushed.Load(),
		Applied: s.Applied(), Tiers: s.tiers.stats()}
	for name, ti := range cat.tables {
		ts := TableStats{Name: name}
		for _, t := range tasks {
			ts.Add(t.stats[ti.idx])
		}
		st.Tables[ti.idx] = ts
	}
	for _, t := range tasks {
		st.Dense = append(st.Dense, t.denseStats...)
	}
	slices.SortFunc(st.Dense, func(a, b ams.DenseUsage) int { return strings.Compare(a.Name, b.Name) })
	return st, nil
}
