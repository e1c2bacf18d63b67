package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/filters"
	"gopkg.in/yaml.v3"
)

// Zero in the Go API and zero written by a user.
//
// In a Config built in Go, a zero field means its default (EnsureDefaults
// fills it): a struct literal need not spell out every setting. A user who
// writes zero, in the YAML file or on the command line (-set, the short
// flags), means zero, and for the keys whose field is tagged
// zero:"refused" zero means nothing: a batch of 0 samples, 0 epochs, a
// learning rate of 0. Parse and Set refuse such a zero, as they refuse a
// negative value, instead of quietly running with the default. Keys where zero means something (eval_every
// 0: after each epoch only; model.fields 0: from the data; every_samples
// 0: off; budget 0: no bound; ...) keep it, as their docs say.

// zeroRefused maps the keys (YAML paths, [*] for every element of a list)
// whose explicit zero is refused to a hint of what to write instead (""
// for none beyond the default): the fields of the config structs tagged
// zero:"refused", wherever the structs sit in Config (an optimizer's keys
// under every table and under model.dense_optimizer).
var zeroRefused = taggedZeros(reflect.TypeFor[Config](), "", nil)

// zeroTag is the struct tag that marks a config key whose explicit zero
// is refused: `zero:"refused"`, or `zero:"refused; HINT"` with a hint of
// what to write instead, which the error gives after the default.
const zeroTag = "zero"

// taggedZeros returns the keys under struct type t (YAML paths under
// prefix, [*] for every element of a list) whose field carries zeroTag,
// each with its hint ("" for none). It follows what Set and the YAML
// decoder follow: exported fields by their YAML key, inline structs,
// pointers, lists of structs.
func taggedZeros(t reflect.Type, prefix string, out map[string]string) map[string]string {
	if out == nil {
		out = map[string]string{}
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(sf.Name)
		}
		path := strings.TrimPrefix(prefix+"."+key, ".")
		if strings.Contains(opts, "inline") {
			path = prefix
		}
		if tag, ok := sf.Tag.Lookup(zeroTag); ok {
			rule, hint, _ := strings.Cut(tag, ";")
			if rule != "refused" {
				panic(fmt.Sprintf("config: %s.%s: tag %s:%q, want \"refused\" or \"refused; HINT\"", t, sf.Name, zeroTag, tag))
			}
			out[path] = strings.TrimSpace(hint)
		}
		ft := deref(sf.Type)
		if ft.Kind() == reflect.Slice {
			path, ft = path+"[*]", deref(ft.Elem())
		}
		if ft.Kind() == reflect.Struct {
			taggedZeros(ft, path, out)
		}
	}
	return out
}

// deref is t without its pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// listIndex matches a list index of a path, "[3]".
var listIndex = regexp.MustCompile(`\[\d+\]`)

// refuseZero returns the error of the keys under path (as Set takes it)
// that are zero in c, if zero means nothing for path's key.
func refuseZero(c *Config, path string) error {
	if _, ok := zeroRefused[listIndex.ReplaceAllString(path, "[*]")]; !ok {
		return nil
	}
	var at []string
	zeroKeys(reflect.ValueOf(c).Elem(), nil, strings.Split(path, "."), "", &at)
	if len(slices.DeleteFunc(at, func(p string) bool { return !zeroApplies(c, p) })) == 0 {
		return nil
	}
	return zeroError(path)
}

// tableIndex matches the table of an admission key's path.
var tableIndex = regexp.MustCompile(`^model\.tables\[(\d+)\]\.admission\.`)

// zeroApplies reports whether the rule on explicit zeros applies to the
// key at path in c: an admission key other than its kind applies only to
// a table with count admission (other kinds hold zeros there, which mean
// "unused"), and model.cross_layers only with kind dcnv2 (other kinds
// hold 0).
func zeroApplies(c *Config, path string) bool {
	if path == "model.cross_layers" {
		return c.Model.Kind == KindDCNv2
	}
	m := tableIndex.FindStringSubmatch(path)
	if m == nil || strings.HasSuffix(path, ".kind") {
		return true
	}
	i, _ := strconv.Atoi(m[1])
	return i < len(c.Model.Tables) && c.Model.Tables[i].Admission.Kind == filters.KindCount
}

// explicitZeros returns the errors of the keys of zeroRefused that the
// YAML document root gives as zero (c is what it decoded to).
func explicitZeros(root *yaml.Node, c *Config) []error {
	if root == nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	var at []string
	for path := range zeroRefused {
		if strings.HasPrefix(path, "kafka.") && !c.Kafka.Enabled() {
			continue // its defaults apply only with brokers: a printed config holds zeros there
		}
		zeroKeys(reflect.ValueOf(c).Elem(), root.Content[0], strings.Split(path, "."), "", &at)
	}
	var errs []error
	for _, p := range sortedUnique(at) {
		if zeroApplies(c, p) {
			errs = append(errs, zeroError(p))
		}
	}
	return errs
}

// zeroError is the error of an explicit zero at path, naming the default.
func zeroError(path string) error {
	pattern := listIndex.ReplaceAllString(path, "[*]")
	hint := ""
	if h := zeroRefused[pattern]; h != "" {
		hint = "; " + h
	}
	return fmt.Errorf("%w: %s 0 is not allowed (leave it out for the default, %s%s)", ErrInvalid, path, defaultOf(pattern), hint)
}

// defaultOf renders the default value of the key at pattern.
func defaultOf(pattern string) string {
	c := Config{Kafka: KafkaConfig{Brokers: []string{"-"}}} // the kafka defaults apply with brokers
	if pattern == "model.cross_layers" {
		c.Model.Kind = KindDCNv2 // its default applies with dcnv2 only
	}
	c.EnsureDefaults()
	if strings.Contains(pattern, ".admission.") { // and those of admission with kind count
		for i := range c.Model.Tables {
			c.Model.Tables[i].Admission.Kind = filters.KindCount
			c.Model.Tables[i].EnsureDefaults()
		}
	}
	var out []string
	collect(reflect.ValueOf(&c).Elem(), strings.Split(pattern, "."), &out)
	if len(out) == 0 {
		return "none"
	}
	return out[0]
}

// collect appends the values at the path's remaining parts, rendered.
func collect(v reflect.Value, parts []string, out *[]string) {
	walk(v, nil, parts, "", func(v reflect.Value, _ string) {
		*out = append(*out, render(v))
	})
}

// render writes a default value as a flag takes it: a list comma-separated,
// an empty one or an empty string "none".
func render(v reflect.Value) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "none"
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice:
		var items []string
		for i := 0; i < v.Len(); i++ {
			items = append(items, render(v.Index(i)))
		}
		if len(items) == 0 {
			return "none"
		}
		return strings.Join(items, ",")
	case reflect.String:
		if v.String() == "" {
			return "none"
		}
	}
	return fmt.Sprint(v.Interface())
}

// aliasDefault is the default of the key a short flag sets (its first
// path that takes the flag's value).
func aliasDefault(a Alias) string {
	for _, p := range a.Paths {
		if !strings.Contains(p, "=") {
			return defaultOf(p)
		}
	}
	return "none"
}

// zeroKeys appends to at the paths under parts whose value in v is zero
// and, when node is not nil, which node (a YAML mapping) gives.
func zeroKeys(v reflect.Value, node *yaml.Node, parts []string, prefix string, at *[]string) {
	walk(v, node, parts, prefix, func(v reflect.Value, path string) {
		if v.IsZero() {
			*at = append(*at, path)
		}
	})
}

// walk calls fn with each value the path's remaining parts name under v,
// and its path; with node, only those given in node, the YAML that v was
// decoded from. A part "name[*]" names every element of a list,
// "name[i]" one.
func walk(v reflect.Value, node *yaml.Node, parts []string, prefix string, fn func(reflect.Value, string)) {
	if len(parts) == 0 {
		fn(v, prefix)
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	name, index, err := splitIndex(parts[0])
	if err != nil || v.Kind() != reflect.Struct {
		return
	}
	f, ok := field(v, name)
	if !ok {
		return
	}
	if node != nil {
		if node = mapValue(node, name); node == nil {
			return
		}
	}
	path := strings.TrimPrefix(prefix+"."+name, ".")
	if index == "" {
		walk(f, node, parts[1:], path, fn)
		return
	}
	if f.Kind() != reflect.Slice {
		return
	}
	for i := 0; i < f.Len(); i++ {
		if index != "*" && index != strconv.Itoa(i) {
			continue
		}
		var elem *yaml.Node
		if node != nil {
			if node.Kind != yaml.SequenceNode || i >= len(node.Content) {
				continue
			}
			elem = node.Content[i]
		}
		walk(f.Index(i), elem, parts[1:], fmt.Sprintf("%s[%d]", path, i), fn)
	}
}

// mapValue returns the value of key in the YAML mapping node, or nil.
func mapValue(node *yaml.Node, key string) *yaml.Node {
	if node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

// sortedUnique sorts ss and drops repeats.
func sortedUnique(ss []string) []string {
	slices.Sort(ss)
	return slices.Compact(ss)
}
