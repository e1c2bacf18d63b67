package movielens

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// user and item side features, as tokens.
type user struct{ id, age, gender, occupation, zip string }
type item struct {
	id     string
	genres []string
	main   string // the first genre flag set ("0", unknown, when none is)
}

// Dataset is the side information of MovieLens-100K.
type Dataset struct {
	dir   string
	users map[string]user
	items map[string]item
}

// Open reads u.user and u.item from dir.
func Open(dir string) (*Dataset, error) {
	d := &Dataset{dir: dir, users: map[string]user{}, items: map[string]item{}}
	err := eachLine(filepath.Join(dir, "u.user"), "|", 5, func(f []string) error {
		d.users[f[0]] = user{id: f[0], age: f[1], gender: f[2], occupation: f[3], zip: f[4]}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "u.item"), "|", 24, func(f []string) error {
		it := item{id: f[0]}
		for g, flag := range f[5:24] {
			if flag == "1" {
				it.genres = append(it.genres, strconv.Itoa(g))
			}
		}
		it.main = "0"
		if len(it.genres) > 0 {
			it.main = it.genres[0]
		}
		d.items[f[0]] = it
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// eachLine calls fn with the fields of every non-empty line of path, which
// must have at least n fields separated by sep.
func eachLine(path, sep string, n int, fn func([]string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("movielens: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimRight(sc.Text(), "\r")
		if s == "" {
			continue
		}
		fields := strings.Split(s, sep)
		if len(fields) < n {
			return fmt.Errorf("movielens: %s:%d: %d fields, want %d", path, line, len(fields), n)
		}
		if err := fn(fields); err != nil {
			return fmt.Errorf("movielens: %s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("movielens: %s: %w", path, err)
	}
	return nil
}

// Counts are what Convert or Sequences.Write wrote.
type Counts struct {
	Samples, Groups, Positives int
	// EmptyHistory counts the samples without history and HistoryItems the
	// movies of all histories (sequence mode).
	EmptyHistory, HistoryItems int
}

// Convert reads the ratings file name (e.g. "ua.base") and writes it as
// sample groups to group and as libFFM to ffm (either may be nil).
func (d *Dataset) Convert(name string, group, ffm io.Writer) (Counts, error) {
	var c Counts
	var gw, fw *bufio.Writer
	if group != nil {
		gw = bufio.NewWriter(group)
	}
	if ffm != nil {
		fw = bufio.NewWriter(ffm)
	}
	prev := ""
	err := eachLine(filepath.Join(d.dir, name), "\t", 4, func(f []string) error {
		u, it, r, err := d.rating(f)
		if err != nil {
			return err
		}
		label := "0"
		if r >= 4 {
			label = "1"
			c.Positives++
		}
		userTok := fmt.Sprintf("0:%s 1:%s 2:%s 3:%s 4:%s", u.id, u.age, u.gender, u.occupation, u.zip)
		itemTok := "5:" + it.id
		for _, g := range it.genres {
			itemTok += " 6:" + g
		}
		if gw != nil {
			if u.id != prev {
				fmt.Fprintf(gw, "group 2\n1 - - %s\n", userTok)
				c.Groups++
			}
			fmt.Fprintf(gw, "0 0 %s %s\n", label, itemTok)
		}
		if fw != nil {
			fmt.Fprintf(fw, "%s %s %s\n", label, withValues(userTok), withValues(itemTok))
		}
		prev = u.id
		c.Samples++
		return nil
	})
	if err != nil {
		return c, err
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

// withValues turns "f:tok f:tok" into libFFM's "f:tok:1 f:tok:1".
func withValues(s string) string { return strings.ReplaceAll(s, " ", ":1 ") + ":1" }

// rating looks up the user and the item of a ratings line (user, item,
// rating, timestamp) and parses its rating.
func (d *Dataset) rating(f []string) (user, item, int, error) {
	u, ok := d.users[f[0]]
	if !ok {
		return user{}, item{}, 0, fmt.Errorf("unknown user %q", f[0])
	}
	it, ok := d.items[f[1]]
	if !ok {
		return user{}, item{}, 0, fmt.Errorf("unknown item %q", f[1])
	}
	r, err := strconv.Atoi(f[2])
	if err != nil {
		return user{}, item{}, 0, fmt.Errorf("rating %q: %w", f[2], err)
	}
	return u, it, r, nil
}
