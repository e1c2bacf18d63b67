package clusterfsm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The scenario scripts under testdata/ drive a Core with one command per
// line (several may share a line, separated by ";"). A block is one or
// more command lines, a line "----", and the expected output: every
// command's Output, one action per line, then "state: <state>". A blank
// line ends the block; lines starting with "#" between blocks are
// comments. Run with -rewrite to regenerate the expected output.
//
//	new shards=N [workers=M] [every=DUR] [export-every=DUR] [keep=K] [snapshots=3,5]
//	    [last-snapshot=S] [last-version=V] [no-initial-snapshot] [pinned=P]
//	    [adopt=V] [adopt-shards=ID,...] [adopt-workers=ID,...]
//	    [adopt-left=ID,...] [adopt-serving] [adopt-stopped] [adopt-max-incarnation=I]
//	    [adopt-lives=ID@LIFE,...] [rejoin-wait=DUR]
//	                            a new Core with these Options; any adopt
//	                            option sets Options.Adopt, adopt=V its
//	                            Version
//	join MEMBER...              Joined, one per member
//	expire MEMBER...            Left (lease expired), one per member
//	leave MEMBER...             Left (graceful), one per member
//	tick DUR                    Tick at the script's epoch plus DUR
//	snapshot [pin]              SnapshotRequested (Pin with pin)
//	rollback                    RollbackRequested
//	export                      ExportRequested
//	exported N [fail]           ExportDone of export #N
//	settle                      CutSettled (the driver settled the cut that
//	                            ended: queued requests go)
//	done snap-N [fail]          SnapshotDone, failed with "injected" if fail
//	restored SHARD... snap-N|empty [vV] [fail]
//	                            RestoreDone, one per shard (empty: of
//	                            snapshot 0, a new cluster begun); without
//	                            vV at the Core's current version
//	show                        print slots, live members, good snapshots,
//	                            the pending and pinned snapshots, the queued
//	                            requests
//
// MEMBER is [KIND/]ID[#INCARNATION][@LIFE]; without KIND it comes from the ID's
// prefix: ams..., worker..., sched... (so ams-0, worker-1, sched-a).

// errInjected is the error of a "fail" in a script.
var errInjected = errors.New("injected failure")

// scriptEpoch is the time "tick 0s" stands for.
var scriptEpoch = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

type cmd struct {
	verb    string
	opts    Options
	members []Member
	shards  []string
	dur     time.Duration
	snap    SnapshotID
	export  ExportID
	empty   bool // restored empty: the shards began a new cluster
	pin     bool // snapshot pin
	version uint64
	fail    bool
}

type block struct {
	line  int    // line number of the first command line
	pre   string // comments and blank lines before the block
	input string // the command lines as written
	cmds  []cmd
	want  string // expected output, lines joined by "\n"
}

type script struct {
	blocks  []block
	trailer string // comments and blank lines after the last block
}

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

func isComment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }

func parseScript(src string) (script, error) {
	var sc script
	lines := strings.Split(src, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i := 0
	for {
		var pre strings.Builder
		for i < len(lines) && (isBlank(lines[i]) || isComment(lines[i])) {
			pre.WriteString(lines[i] + "\n")
			i++
		}
		if i == len(lines) {
			sc.trailer = pre.String()
			return sc, nil
		}
		b := block{line: i + 1, pre: pre.String()}
		var input strings.Builder
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input.WriteString(lines[i] + "\n")
			if isComment(lines[i]) {
				continue
			}
			for _, part := range strings.Split(lines[i], ";") {
				if isBlank(part) {
					continue
				}
				c, err := parseCmd(part)
				if err != nil {
					return sc, fmt.Errorf("line %d: %w", i+1, err)
				}
				b.cmds = append(b.cmds, c)
			}
		}
		if i == len(lines) {
			return sc, fmt.Errorf("line %d: block has no ----", b.line)
		}
		if len(b.cmds) == 0 {
			return sc, fmt.Errorf("line %d: block has no command", b.line)
		}
		i++ // ----
		var want []string
		for ; i < len(lines) && !isBlank(lines[i]); i++ {
			want = append(want, lines[i])
		}
		b.input, b.want = input.String(), strings.Join(want, "\n")
		sc.blocks = append(sc.blocks, b)
	}
}

func parseCmd(s string) (cmd, error) {
	f := strings.Fields(s)
	c := cmd{verb: f[0]}
	args := f[1:]
	switch c.verb {
	case "new":
		return c, parseOptions(&c.opts, args)
	case "join", "expire", "leave":
		if len(args) == 0 {
			return c, fmt.Errorf("%s: no member", c.verb)
		}
		for _, a := range args {
			m, err := parseMember(a)
			if err != nil {
				return c, err
			}
			c.members = append(c.members, m)
		}
	case "tick":
		if len(args) != 1 {
			return c, errors.New("tick: want one duration")
		}
		var err error
		if c.dur, err = time.ParseDuration(args[0]); err != nil {
			return c, fmt.Errorf("tick: %w", err)
		}
	case "exported":
		return c, parseExported(&c, args)
	case "snapshot":
		if c.pin = len(args) == 1 && args[0] == "pin"; len(args) != 0 && !c.pin {
			return c, errors.New("snapshot: takes pin or nothing")
		}
	case "rollback", "export", "show", "settle":
		if len(args) != 0 {
			return c, fmt.Errorf("%s: takes no argument", c.verb)
		}
	case "done", "restored":
		return c, parseSnapshotArgs(&c, args)
	default:
		return c, fmt.Errorf("unknown command %q", c.verb)
	}
	return c, nil
}

// parseSnapshotArgs parses the arguments of "done" and "restored".
func parseSnapshotArgs(c *cmd, args []string) error {
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "snap-"):
			if c.snap != 0 || c.empty {
				return fmt.Errorf("%s: two snapshots", c.verb)
			}
			n, err := strconv.ParseUint(a[len("snap-"):], 10, 64)
			if err != nil || n == 0 {
				return fmt.Errorf("%s: bad snapshot %q", c.verb, a)
			}
			c.snap = SnapshotID(n)
		case a == "fail":
			if c.fail {
				return fmt.Errorf("%s: two fails", c.verb)
			}
			c.fail = true
		case c.verb == "restored" && isVersion(a):
			if c.version != 0 {
				return errors.New("restored: two versions")
			}
			n, err := strconv.ParseUint(a[1:], 10, 64)
			if err != nil || n == 0 {
				return fmt.Errorf("restored: bad version %q", a)
			}
			c.version = n
		case c.verb == "restored" && a == "empty":
			if c.empty || c.snap != 0 {
				return errors.New("restored: two snapshots")
			}
			c.empty = true
		case c.verb == "restored" && validName(a):
			c.shards = append(c.shards, a)
		default:
			return fmt.Errorf("%s: bad argument %q", c.verb, a)
		}
	}
	if c.snap == 0 && !c.empty {
		return fmt.Errorf("%s: no snapshot", c.verb)
	}
	if c.verb == "restored" && len(c.shards) == 0 {
		return errors.New("restored: no shard")
	}
	return nil
}

// parseExported parses the arguments of "exported N [fail]".
func parseExported(c *cmd, args []string) error {
	if len(args) == 0 || len(args) > 2 || len(args) == 2 && args[1] != "fail" {
		return errors.New("exported: want N [fail]")
	}
	n, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("exported: bad export %q", args[0])
	}
	c.export, c.fail = ExportID(n), len(args) == 2
	return nil
}

func isVersion(a string) bool {
	if len(a) < 2 || a[0] != 'v' {
		return false
	}
	for _, r := range a[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func validName(s string) bool { return s != "" && !strings.ContainsAny(s, "/#;") }

func kindOf(id string) (Kind, bool) {
	switch {
	case strings.HasPrefix(id, "ams"):
		return KindAMS, true
	case strings.HasPrefix(id, "worker"):
		return KindWorker, true
	case strings.HasPrefix(id, "sched"):
		return KindScheduler, true
	}
	return "", false
}

func parseMember(s string) (Member, error) {
	var m Member
	rest := s
	if k, id, ok := strings.Cut(rest, "/"); ok {
		m.Kind, rest = Kind(k), id
		if !m.Kind.valid() {
			return m, fmt.Errorf("member %q: unknown kind", s)
		}
	}
	if id, life, ok := strings.Cut(rest, "@"); ok {
		if life == "" {
			return m, fmt.Errorf("member %q: empty life", s)
		}
		m.Life, rest = life, id
	}
	if id, inc, ok := strings.Cut(rest, "#"); ok {
		n, err := strconv.ParseInt(inc, 10, 64)
		if err != nil || n < 0 {
			return m, fmt.Errorf("member %q: bad incarnation", s)
		}
		m.Incarnation, rest = n, id
	}
	if !validName(rest) {
		return m, fmt.Errorf("member %q: bad id", s)
	}
	m.ID = rest
	if m.Kind == "" {
		k, ok := kindOf(m.ID)
		if !ok {
			return m, fmt.Errorf("member %q: no kind", s)
		}
		m.Kind = k
	}
	return m, nil
}

func formatMember(m Member) string {
	s := m.ID
	if k, ok := kindOf(m.ID); !ok || k != m.Kind {
		s = string(m.Kind) + "/" + s
	}
	if m.Incarnation != 0 {
		s += "#" + strconv.FormatInt(m.Incarnation, 10)
	}
	if m.Life != "" {
		s += "@" + m.Life
	}
	return s
}

// adoptOf returns o.Adopt, set to a new Adopted if it is nil.
func adoptOf(o *Options) *Adopted {
	if o.Adopt == nil {
		o.Adopt = &Adopted{}
	}
	return o.Adopt
}

// parseFlag sets the option of a "new" argument without a value, and
// reports whether a is one.
func parseFlag(o *Options, a string) bool {
	switch a {
	case "no-initial-snapshot":
		o.SkipInitialSnapshot = true
	case "adopt-serving":
		adoptOf(o).Serving = true
	case "adopt-stopped":
		adoptOf(o).Stopped = true
	default:
		return false
	}
	return true
}

func parseOptions(o *Options, args []string) error {
	adopt := func() *Adopted { return adoptOf(o) }
	for _, a := range args {
		if parseFlag(o, a) {
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("new: bad argument %q", a)
		}
		var err error
		switch k {
		case "shards":
			o.Shards, err = strconv.Atoi(v)
		case "workers":
			o.Workers, err = strconv.Atoi(v)
		case "keep":
			o.Keep, err = strconv.Atoi(v)
		case "every":
			o.SnapshotEvery, err = time.ParseDuration(v)
		case "export-every":
			o.ExportEvery, err = time.ParseDuration(v)
		case "last-version":
			o.LastVersion, err = strconv.ParseUint(v, 10, 64)
		case "last-snapshot":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 64)
			o.LastSnapshot = SnapshotID(n)
		case "pinned":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 64)
			o.Pinned = SnapshotID(n)
		case "snapshots":
			o.Snapshots = nil
			for _, s := range strings.Split(v, ",") {
				var n uint64
				if n, err = strconv.ParseUint(s, 10, 64); err != nil {
					break
				}
				o.Snapshots = append(o.Snapshots, SnapshotID(n))
			}
		case "adopt":
			adopt().Version, err = strconv.ParseUint(v, 10, 64)
		case "adopt-shards":
			adopt().Shards = strings.Split(v, ",")
		case "adopt-workers":
			adopt().Workers = strings.Split(v, ",")
		case "adopt-left":
			adopt().Left = strings.Split(v, ",")
		case "adopt-max-incarnation":
			adopt().MaxIncarnation, err = strconv.ParseInt(v, 10, 64)
		case "adopt-lives":
			a := adopt()
			a.Lives = map[string]string{}
			for _, ml := range strings.Split(v, ",") {
				var m Member
				if m, err = parseMember(ml); err != nil || m.Life == "" {
					err = fmt.Errorf("adopt-lives: %q is not ID@LIFE", ml)
					break
				}
				a.Lives[m.key()] = m.Life
			}
		case "rejoin-wait":
			o.RejoinWait, err = time.ParseDuration(v)
		default:
			return fmt.Errorf("new: unknown option %q", k)
		}
		if err != nil {
			return fmt.Errorf("new: %s: %w", k, err)
		}
	}
	return nil
}

func formatCmd(c cmd) string {
	f := []string{c.verb}
	switch c.verb {
	case "new":
		f = append(f, formatOptions(c.opts)...)
	case "join", "expire", "leave":
		for _, m := range c.members {
			f = append(f, formatMember(m))
		}
	case "tick":
		f = append(f, c.dur.String())
	case "snapshot":
		if c.pin {
			f = append(f, "pin")
		}
	case "exported":
		f = append(f, strconv.FormatUint(uint64(c.export), 10))
		f = appendFail(f, c.fail)
	case "done", "restored":
		f = append(f, c.shards...)
		f = append(f, c.snap.String())
		if c.version != 0 {
			f = append(f, "v"+strconv.FormatUint(c.version, 10))
		}
		f = appendFail(f, c.fail)
	}
	return strings.Join(f, " ")
}

// formatOptions renders the options of "new".
func formatOptions(o Options) []string {
	var f []string
	if o.Shards != 0 {
		f = append(f, "shards="+strconv.Itoa(o.Shards))
	}
	if o.Workers != 0 {
		f = append(f, "workers="+strconv.Itoa(o.Workers))
	}
	if o.SnapshotEvery != 0 {
		f = append(f, "every="+o.SnapshotEvery.String())
	}
	if o.ExportEvery != 0 {
		f = append(f, "export-every="+o.ExportEvery.String())
	}
	if o.Keep != 0 {
		f = append(f, "keep="+strconv.Itoa(o.Keep))
	}
	if o.Snapshots != nil {
		s := make([]string, len(o.Snapshots))
		for i, id := range o.Snapshots {
			s[i] = strconv.FormatUint(uint64(id), 10)
		}
		f = append(f, "snapshots="+strings.Join(s, ","))
	}
	if o.LastSnapshot != 0 {
		f = append(f, "last-snapshot="+strconv.FormatUint(uint64(o.LastSnapshot), 10))
	}
	if o.LastVersion != 0 {
		f = append(f, "last-version="+strconv.FormatUint(o.LastVersion, 10))
	}
	if o.Pinned != 0 {
		f = append(f, "pinned="+strconv.FormatUint(uint64(o.Pinned), 10))
	}
	if o.SkipInitialSnapshot {
		f = append(f, "no-initial-snapshot")
	}
	if o.RejoinWait != 0 {
		f = append(f, "rejoin-wait="+o.RejoinWait.String())
	}
	if a := o.Adopt; a != nil {
		f = append(f, "adopt="+strconv.FormatUint(a.Version, 10))
		if a.Shards != nil {
			f = append(f, "adopt-shards="+strings.Join(a.Shards, ","))
		}
		if a.Workers != nil {
			f = append(f, "adopt-workers="+strings.Join(a.Workers, ","))
		}
		if a.Left != nil {
			f = append(f, "adopt-left="+strings.Join(a.Left, ","))
		}
		if a.Serving {
			f = append(f, "adopt-serving")
		}
		if a.Stopped {
			f = append(f, "adopt-stopped")
		}
		if a.MaxIncarnation != 0 {
			f = append(f, "adopt-max-incarnation="+strconv.FormatInt(a.MaxIncarnation, 10))
		}
		if len(a.Lives) > 0 {
			var ls []string
			for _, k := range slices.Sorted(maps.Keys(a.Lives)) {
				_, id, _ := strings.Cut(k, "/")
				ls = append(ls, id+"@"+a.Lives[k])
			}
			f = append(f, "adopt-lives="+strings.Join(ls, ","))
		}
	}
	return f
}

// appendFail appends "fail" to f when fail is set.
func appendFail(f []string, fail bool) []string {
	if fail {
		return append(f, "fail")
	}
	return f
}

// formatScript renders sc canonically: one command per line, no comments.
func formatScript(sc script) string {
	var b strings.Builder
	for _, bl := range sc.blocks {
		for _, c := range bl.cmds {
			b.WriteString(formatCmd(c) + "\n")
		}
		b.WriteString("----\n")
		if bl.want != "" {
			b.WriteString(bl.want + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runner runs script commands against a Core.
type runner struct {
	core *Core
}

// run runs b's commands and returns their output.
func (r *runner) run(b block) string {
	var out strings.Builder
	for _, c := range b.cmds {
		r.runCmd(&out, c)
	}
	if r.core != nil {
		fmt.Fprintf(&out, "state: %v\n", r.core.State())
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func (r *runner) step(out *strings.Builder, ev Event) {
	out.WriteString(r.core.Step(ev).String())
}

func (r *runner) runCmd(out *strings.Builder, c cmd) {
	if c.verb == "new" {
		core, err := New(c.opts)
		if err != nil {
			fmt.Fprintf(out, "error: %v\n", err)
			r.core = nil
			return
		}
		r.core = core
		return
	}
	if r.core == nil {
		out.WriteString("error: no core: start with new\n")
		return
	}
	var errOf = func(fail bool) error {
		if fail {
			return errInjected
		}
		return nil
	}
	switch c.verb {
	case "join":
		for _, m := range c.members {
			r.step(out, Joined{Member: m})
		}
	case "expire", "leave":
		for _, m := range c.members {
			r.step(out, Left{Member: m, Graceful: c.verb == "leave"})
		}
	case "tick":
		r.step(out, Tick{Now: scriptEpoch.Add(c.dur)})
	case "snapshot":
		r.step(out, SnapshotRequested{Pin: c.pin})
	case "rollback":
		r.step(out, RollbackRequested{})
	case "export":
		r.step(out, ExportRequested{})
	case "exported":
		r.step(out, ExportDone{ID: c.export, Err: errOf(c.fail)})
	case "settle":
		r.step(out, CutSettled{})
	case "done":
		r.step(out, SnapshotDone{ID: c.snap, Err: errOf(c.fail)})
	case "restored":
		for _, s := range c.shards {
			v := c.version
			if v == 0 {
				v = r.core.State().Version
			}
			r.step(out, RestoreDone{Shard: s, Snapshot: c.snap, Version: v, Err: errOf(c.fail)})
		}
	case "show":
		var ms []string
		for _, m := range r.core.Members("") {
			ms = append(ms, formatMember(m))
		}
		fmt.Fprintf(out, "slots: [%s]\n", strings.Join(r.core.Slots(), " "))
		fmt.Fprintf(out, "members: [%s]\n", strings.Join(ms, " "))
		fmt.Fprintf(out, "snapshots: %v\n", r.core.Snapshots())
		if p := r.core.Pending(); p != 0 {
			fmt.Fprintf(out, "pending: %v\n", p)
		}
		if p := r.core.Pinned(); p != 0 {
			fmt.Fprintf(out, "pinned: %v\n", p)
		}
		if q := r.core.Queued(); len(q) > 0 {
			var rs []string
			for _, a := range q {
				rs = append(rs, strings.TrimPrefix(a.String(), "queue "))
			}
			fmt.Fprintf(out, "queued: %s\n", strings.Join(rs, ", "))
		}
	}
}
