package movielens

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/model/hashmix"
)

// Sequence mode's constants (see the package documentation).
const (
	// DefaultHistory is the recommended maximum history length.
	DefaultHistory = 50
	// MaxHistory bounds SeqOptions.History.
	MaxHistory = 10000
	// RatingsFile is the file of all ratings that Sequences reads.
	RatingsFile = "u.data"
)

// Fields of the sequence mode beyond the plain mode's 0-6.
const (
	FieldMainGenre    = 7  // level 0: the candidate's main genre
	FieldHistItems    = 8  // level 1: history movie ids, oldest first
	FieldHistGenres   = 9  // level 1: their main genres
	FieldNegItems     = 10 // level 1: negative history movie ids
	FieldNegGenres    = 11 // level 1: their main genres
	fieldItem         = 5
	sequenceFieldsEnd = 12
)

// SequenceTargets returns, for each sequence field, the field whose token
// namespace it shares: history and negative movies that of the candidate
// movie (5), their genres that of the candidate's main genre (7).
func SequenceTargets() map[uint32]uint32 {
	return map[uint32]uint32{FieldHistItems: fieldItem, FieldHistGenres: FieldMainGenre,
		FieldNegItems: fieldItem, FieldNegGenres: FieldMainGenre}
}

// ErrBadOptions is wrapped by the errors of invalid SeqOptions.
var ErrBadOptions = errors.New("movielens: bad sequence options")

// SeqOptions configures the sequence mode.
type SeqOptions struct {
	// History is the maximum length N of a rating's history: the user's
	// last N movies rated strictly before it. 1 <= History <= MaxHistory.
	// The default value is DefaultHistory (50).
	History int
	// Seed selects the negative history movies. The default value is 1.
	Seed uint64
}

// EnsureDefaults fills zero fields with their defaults.
func (o *SeqOptions) EnsureDefaults() {
	if o.History == 0 {
		o.History = DefaultHistory
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Validate reports the problems of o; call EnsureDefaults first.
func (o *SeqOptions) Validate() error {
	if o.History < 1 || o.History > MaxHistory {
		return fmt.Errorf("%w: history %d not in [1, %d]", ErrBadOptions, o.History, MaxHistory)
	}
	return nil
}

// Part is one side of the time split.
type Part int

// The parts of the time split.
const (
	Train Part = iota
	Test
)

func (p Part) String() string {
	if p == Test {
		return "test"
	}
	return "train"
}

// seqRating is one rating in sequence mode.
type seqRating struct {
	it    *item
	num   int   // the item's id as a number (the tie-break)
	ts    int64 // unix seconds
	label bool
	neg   *item // the negative drawn for this rating
}

// seqUser is a user and its ratings in order (invariant 1).
type seqUser struct {
	u   user
	num int
	rs  []seqRating
}

// Sequences is MovieLens in sequence mode: every user's ratings in order,
// their negatives, and the time split. Build it with Dataset.Sequences.
type Sequences struct {
	opt    SeqOptions
	cutoff int64
	users  []seqUser // by numeric id
	counts [2]int    // ratings per part
}

// Sequences reads the ratings file name (RatingsFile for all ratings)
// and prepares the sequence mode with the options opt (defaults filled
// in).
func (d *Dataset) Sequences(name string, opt SeqOptions) (*Sequences, error) {
	opt.EnsureDefaults()
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	byUser, err := d.readRatings(name)
	if err != nil {
		return nil, err
	}
	if len(byUser) == 0 {
		return nil, fmt.Errorf("movielens: %s holds no rating", name)
	}
	s := &Sequences{opt: opt}
	var all []int64
	for _, su := range byUser {
		slices.SortFunc(su.rs, func(a, b seqRating) int {
			if a.ts != b.ts {
				return cmpInt64(a.ts, b.ts)
			}
			return a.num - b.num
		})
		for _, r := range su.rs {
			all = append(all, r.ts)
		}
		s.users = append(s.users, *su)
	}
	slices.SortFunc(s.users, func(a, b seqUser) int { return a.num - b.num })
	slices.Sort(all)
	nTest := (len(all) + 4) / 5 // ceil(n/5): the last 20% (invariant 4)
	s.cutoff = all[len(all)-nTest]
	for _, ts := range all {
		s.counts[s.part(ts)]++
	}
	if err := d.drawNegatives(s); err != nil {
		return nil, err
	}
	return s, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readRatings reads the ratings file, grouped by user.
func (d *Dataset) readRatings(name string) (map[string]*seqUser, error) {
	byUser := map[string]*seqUser{}
	err := eachLine(filepath.Join(d.dir, name), "\t", 4, func(f []string) error {
		u, it, r, err := d.rating(f)
		if err != nil {
			return err
		}
		ts, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return fmt.Errorf("timestamp %q: %w", f[3], err)
		}
		num, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("item id %q is not a number: %w", f[1], err)
		}
		su := byUser[f[0]]
		if su == nil {
			un, err := strconv.Atoi(f[0])
			if err != nil {
				return fmt.Errorf("user id %q is not a number: %w", f[0], err)
			}
			su = &seqUser{u: u, num: un}
			byUser[f[0]] = su
		}
		su.rs = append(su.rs, seqRating{it: &it, num: num, ts: ts, label: r >= 4})
		return nil
	})
	return byUser, err
}

// drawNegatives gives every rating its negative (invariant 3).
func (d *Dataset) drawNegatives(s *Sequences) error {
	ids := make([]int, 0, len(d.items))
	for id := range d.items {
		n, err := strconv.Atoi(id)
		if err != nil {
			return fmt.Errorf("movielens: item id %q is not a number: %w", id, err)
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	var unrated []int
	for ui := range s.users {
		su := &s.users[ui]
		rated := make(map[int]bool, len(su.rs))
		for _, r := range su.rs {
			rated[r.num] = true
		}
		unrated = unrated[:0]
		for _, id := range ids {
			if !rated[id] {
				unrated = append(unrated, id)
			}
		}
		if len(unrated) == 0 {
			return fmt.Errorf("movielens: user %s rated every movie: no negative to draw", su.u.id)
		}
		for i := range su.rs {
			r := &su.rs[i]
			st := hashmix.NewStream(s.opt.Seed, uint64(su.num), uint64(r.num))
			neg := d.items[strconv.Itoa(unrated[st.IntN(len(unrated))])]
			r.neg = &neg
		}
	}
	return nil
}

// Cutoff returns the split's timestamp (invariant 4).
func (s *Sequences) Cutoff() int64 { return s.cutoff }

// Ratings returns the number of ratings of part p.
func (s *Sequences) Ratings(p Part) int { return s.counts[p] }

func (s *Sequences) part(ts int64) Part {
	if ts >= s.cutoff {
		return Test
	}
	return Train
}

// Write writes the ratings of part p as sample groups to group and as
// libFFM to ffm (either may be nil).
func (s *Sequences) Write(p Part, group, ffm io.Writer) (Counts, error) {
	var c Counts
	var gw, fw *bufio.Writer
	if group != nil {
		gw = bufio.NewWriter(group)
	}
	if ffm != nil {
		fw = bufio.NewWriter(ffm)
	}
	var userTok string
	for _, su := range s.users {
		start := 0 // the first rating of the current second
		for i, r := range su.rs {
			if i == 0 || r.ts != su.rs[i-1].ts {
				start = i
				if s.part(r.ts) == p {
					userTok = s.userTokens(&su, start)
					c.Groups++
					if gw != nil {
						fmt.Fprintf(gw, "group 2\n1 - - %s\n", userTok)
					}
				}
			}
			if s.part(r.ts) != p {
				continue
			}
			if start == 0 {
				c.EmptyHistory++
			}
			c.HistoryItems += min(start, s.opt.History)
			label := "0"
			if r.label {
				label = "1"
				c.Positives++
			}
			itemTok := "5:" + r.it.id
			for _, g := range r.it.genres {
				itemTok += " 6:" + g
			}
			itemTok += " 7:" + r.it.main
			if gw != nil {
				fmt.Fprintf(gw, "0 0 %s %s\n", label, itemTok)
			}
			if fw != nil {
				fmt.Fprintf(fw, "%s %s %s\n", label, withValues(userTok), withValues(itemTok))
			}
			c.Samples++
		}
	}
	for _, w := range []*bufio.Writer{gw, fw} {
		if w != nil {
			if err := w.Flush(); err != nil {
				return c, fmt.Errorf("movielens: write: %w", err)
			}
		}
	}
	return c, nil
}

// userTokens returns the level-1 tokens of the ratings of user su that
// start at rating start: the user's fields and the history of the ratings
// before start (invariant 2).
func (s *Sequences) userTokens(su *seqUser, start int) string {
	u := su.u
	var b strings.Builder
	fmt.Fprintf(&b, "0:%s 1:%s 2:%s 3:%s 4:%s", u.id, u.age, u.gender, u.occupation, u.zip)
	hist := su.rs[max(0, start-s.opt.History):start]
	for f := FieldHistItems; f < sequenceFieldsEnd; f++ {
		for _, r := range hist {
			tok := r.it.id
			switch f {
			case FieldHistGenres:
				tok = r.it.main
			case FieldNegItems:
				tok = r.neg.id
			case FieldNegGenres:
				tok = r.neg.main
			}
			fmt.Fprintf(&b, " %d:%s", f, tok)
		}
	}
	return b.String()
}
