package reader

import "testing"

// FuzzWindowName reads arbitrary strings as the File of a checkpoint's
// position, which a resuming window source parses (ParseWindowName): a
// name it takes is the name WindowName gives the position it returns,
// with a non-negative offset, and its stream is the window source's;
// every position WindowName names parses back to itself (its index
// aside, which a name does not hold).
func FuzzWindowName(f *testing.F) {
	f.Add(WindowName(Position{File: "data/part-0001.txt", Offset: 4096, Index: 3}), "x", int64(0))
	f.Add("window(a@b@-1)", "a)b@", int64(1<<62))
	f.Add("window(@+7)", "", int64(7))
	f.Add(WindowEnd, "window(x@1)", int64(-1))
	f.Fuzz(func(t *testing.T, name, file string, offset int64) {
		if p, ok := ParseWindowName(name); ok {
			if p.Offset < 0 || p.Index != 0 {
				t.Fatalf("ParseWindowName(%q) = %+v", name, p)
			}
			if again, ok := ParseWindowName(WindowName(p)); !ok || again != p {
				t.Fatalf("ParseWindowName(%q) = %+v, named %q, which parses as %+v, %v", name, p, WindowName(p), again, ok)
			}
			if StreamOf(name) != StreamOf(WindowEnd) {
				t.Fatalf("window %q is of stream %q, the end of %q", name, StreamOf(name), StreamOf(WindowEnd))
			}
		} else if name != WindowEnd && StreamOf(name) != name {
			t.Fatalf("%q, no window, is of stream %q", name, StreamOf(name))
		}
		if offset < 0 {
			return
		}
		p := Position{File: file, Offset: offset}
		if got, ok := ParseWindowName(WindowName(p)); !ok || got != p {
			t.Fatalf("WindowName(%+v) = %q, which parses as %+v, %v", p, WindowName(p), got, ok)
		}
	})
}
