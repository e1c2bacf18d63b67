package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultPrefix is the key prefix of the cluster named "default".
const DefaultPrefix = "/xps/default"

// Member kinds.
const (
	KindAMS       = "ams"
	KindWorker    = "worker"
	KindScheduler = "scheduler"
)

// maxNameLen bounds ids and cluster names.
const maxNameLen = 128

var (
	// ErrBadName is returned (wrapped) for an invalid cluster name, prefix,
	// kind or id.
	ErrBadName = errors.New("membership: bad name")
	// ErrBadMember is returned (wrapped) for an invalid Member or an
	// undecodable member value.
	ErrBadMember = errors.New("membership: bad member")
	// ErrMemberExists is returned (wrapped) by Register when a live member
	// with the same kind and id is registered.
	ErrMemberExists = errors.New("membership: member already registered")
)

// Member describes one process of the cluster, as stored under
// <prefix>/members/<kind>/<id>.
type Member struct {
	// Kind is KindAMS, KindWorker or KindScheduler.
	Kind string `json:"kind"`
	// ID is unique among members of the same kind.
	ID string `json:"id"`
	// Addr is the address the member serves on (gRPC for AMS shards); it
	// may be empty for members that serve nothing.
	Addr string `json:"addr"`
	// PID is the member's process id.
	PID int `json:"pid"`
	// Started is when the member's process started.
	Started time.Time `json:"started"`
}

// String returns "kind/id".
func (m Member) String() string { return m.Kind + "/" + m.ID }

// Life names the process of m, "<pid>.<start time in ns>", or "" when
// either is unknown: a process registered again after losing its lease
// (Keep) is the same life, with its state; a restarted one is another.
func (m Member) Life() string {
	if m.PID == 0 || m.Started.IsZero() {
		return ""
	}
	return strconv.Itoa(m.PID) + "." + strconv.FormatInt(m.Started.UnixNano(), 10)
}

// Validate checks the member's kind and id.
func (m Member) Validate() error {
	if err := checkKind(m.Kind); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMember, err)
	}
	if err := checkName("id", m.ID); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMember, err)
	}
	return nil
}

// Prefix returns the key prefix of the named cluster, "/xps/<cluster>".
func Prefix(cluster string) (string, error) {
	if err := checkName("cluster name", cluster); err != nil {
		return "", err
	}
	return "/xps/" + cluster, nil
}

// MembersPrefix returns "<prefix>/members/".
func MembersPrefix(prefix string) string { return prefix + "/members/" }

// MemberKey returns "<prefix>/members/<kind>/<id>".
func MemberKey(prefix, kind, id string) string { return MembersPrefix(prefix) + kind + "/" + id }

// LeftPrefix returns "<prefix>/left/".
func LeftPrefix(prefix string) string { return prefix + "/left/" }

// LeftKey returns "<prefix>/left/<kind>/<id>".
func LeftKey(prefix, kind, id string) string { return LeftPrefix(prefix) + kind + "/" + id }

// ParseMemberKey splits "<prefix>/members/<kind>/<id>" into kind and id. It
// reports false for any other key.
func ParseMemberKey(prefix, key string) (kind, id string, ok bool) {
	return splitKindID(MembersPrefix(prefix), key)
}

// ParseLeftKey splits "<prefix>/left/<kind>/<id>" into kind and id. It
// reports false for any other key.
func ParseLeftKey(prefix, key string) (kind, id string, ok bool) {
	return splitKindID(LeftPrefix(prefix), key)
}

func splitKindID(dir, key string) (kind, id string, ok bool) {
	rest, found := strings.CutPrefix(key, dir)
	if !found {
		return "", "", false
	}
	kind, id, found = strings.Cut(rest, "/")
	if !found || kind == "" || id == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	return kind, id, true
}

// DecodeMember decodes the value stored under a member (or left) key and
// checks that it names the kind and id of the key.
func DecodeMember(kind, id string, value []byte) (Member, error) {
	var m Member
	if err := json.Unmarshal(value, &m); err != nil {
		return Member{}, fmt.Errorf("%w: %s/%s: %v", ErrBadMember, kind, id, err)
	}
	if m.Kind != kind || m.ID != id {
		return Member{}, fmt.Errorf("%w: key %s/%s holds member %s", ErrBadMember, kind, id, m)
	}
	if err := m.Validate(); err != nil {
		return Member{}, err
	}
	return m, nil
}

// ValidatePrefix checks that prefix starts and does not end with '/'.
func ValidatePrefix(prefix string) error { return checkPrefix(prefix) }

// ValidateName checks a name used in keys (an id, a cluster or barrier
// name): 1 to 128 bytes of letters, digits and ".-_:". what names it in
// the error, which wraps ErrBadName.
func ValidateName(what, s string) error { return checkName(what, s) }

// WorkerName is the member id of worker i of a job: the worker registers
// under it and the scheduler publishes its assignment under it.
func WorkerName(i int) string { return fmt.Sprintf("worker-%d", i) }

func checkPrefix(prefix string) error {
	if !strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: prefix %q must start and not end with '/'", ErrBadName, prefix)
	}
	return nil
}

func checkKind(kind string) error {
	switch kind {
	case KindAMS, KindWorker, KindScheduler:
		return nil
	}
	return fmt.Errorf("%w: unknown kind %q", ErrBadName, kind)
}

// checkName accepts 1 to maxNameLen bytes of [A-Za-z0-9.-_:].
func checkName(what, s string) error {
	if s == "" || len(s) > maxNameLen {
		return fmt.Errorf("%w: %s %q must be 1 to %d bytes", ErrBadName, what, s, maxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_' || c == ':':
		default:
			return fmt.Errorf("%w: %s %q has byte %q", ErrBadName, what, s, c)
		}
	}
	return nil
}

// ErrNotAMember is returned (wrapped) by CheckRecord for a record under
// the members' keys that no member of ours writes.
var ErrNotAMember = errors.New("membership: not a member's record")

// CheckRecord decodes the record under a member key (key, value and the
// lease it is attached to) and checks that a member could have written
// it: Register writes every record under the member's lease, so a record
// attached to none is no member's (a hand-written or forged key). Readers
// that act on membership (the scheduler's watch, a snapshot's pause)
// quarantine such records: they report them and otherwise ignore them.
func CheckRecord(prefix, key string, value []byte, lease int64) (Member, error) {
	kind, id, ok := ParseMemberKey(prefix, key)
	if !ok {
		return Member{}, fmt.Errorf("%w: %q is not a member key", ErrNotAMember, key)
	}
	m, err := DecodeMember(kind, id, value)
	if err != nil {
		return Member{}, err
	}
	if lease == 0 {
		return Member{}, fmt.Errorf("%w: %s is attached to no lease (members register under one)", ErrNotAMember, key)
	}
	return m, nil
}

// WorkerIndex parses a worker's member id, "worker-<i>" (WorkerName), and
// reports false for any other id.
func WorkerIndex(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, "worker-")
	if !ok || n == "" || (len(n) > 1 && n[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || WorkerName(i) != id {
		return 0, false
	}
	return i, true
}
