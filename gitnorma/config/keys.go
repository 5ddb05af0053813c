package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Entry is one key of the configuration in force and its value.
type Entry struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Entries are the configuration in force (.norma/config.json over the defaults), one entry
// per key, objects spelled out down to their values.
func (c Config) Entries() []Entry {
	var entries []Entry
	flatten("", effective(c), &entries)
	return entries
}

// Get is the value in force of key (a whole object when key names one).
func (c Config) Get(key string) (any, error) {
	if _, err := keyType(key); err != nil {
		return nil, err
	}
	v := any(effective(c))
	for _, part := range strings.Split(key, ".") {
		m, _ := v.(map[string]any)
		v = m[part] // a key the file may leave out (omitempty) reads as null
	}
	return v, nil
}

// TakesText says whether key takes its value as text (a string or a duration) rather than
// as JSON; an unknown key is a *KeyError.
func TakesText(key string) (bool, error) {
	t, err := keyType(key)
	if err != nil {
		return false, err
	}
	return t.Kind() == reflect.String || t == durationType, nil
}

// KeyError is a key the configuration does not have.
type KeyError struct {
	Key string
	// Known are the keys known where the key went wrong; Leaf, when set, is a key that
	// takes a value and was given keys below it.
	Known []string
	Leaf  string
}

func (e *KeyError) Error() string {
	if e.Leaf != "" {
		return fmt.Sprintf("unknown config key %q: %s takes a value, not keys", e.Key, e.Leaf)
	}
	return fmt.Sprintf("unknown config key %q (known keys here: %s)", e.Key, strings.Join(e.Known, ", "))
}

// keyType is the Go type a dotted key of the configuration reads into; an unknown key is a
// *KeyError.
func keyType(key string) (reflect.Type, error) {
	t := configType
	var done []string
	for _, part := range strings.Split(key, ".") {
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // commit.type_map.<issue type>
		case reflect.Struct:
			ft, names := fieldOf(t, part)
			if ft == nil {
				for i, n := range names {
					names[i] = join(strings.Join(done, "."), n)
				}
				return nil, &KeyError{Key: key, Known: names}
			}
			t = ft
		default:
			return nil, &KeyError{Key: key, Leaf: strings.Join(done, ".")}
		}
		done = append(done, part)
	}
	return t, nil
}

// fieldOf is the type of t's field whose JSON name is name (nil when none), and every name.
func fieldOf(t reflect.Type, name string) (reflect.Type, []string) {
	var names []string
	var found reflect.Type
	for i := range t.NumField() {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, n)
		if n == name {
			found = t.Field(i).Type
		}
	}
	return found, names
}

// effective is the configuration as JSON values.
func effective(c Config) map[string]any {
	data, _ := json.Marshal(c)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func flatten(prefix string, v any, out *[]Entry) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, Entry{Key: prefix, Value: v})
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		flatten(join(prefix, k), m[k], out)
	}
}

// SetPath sets m[path...] to v, making the objects on the way.
func SetPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// ValueText is a value as config get and list print it: strings bare, the rest JSON.
func ValueText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // commands: "a > b", not "a \u003e b"
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
