package gitnorma

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ConfigEntry is one key of the configuration in force and its value.
type ConfigEntry struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Entries are the configuration in force (.norma/config.json over the defaults), one entry
// per key, objects spelled out down to their values.
func (c Config) Entries() []ConfigEntry {
	var entries []ConfigEntry
	flatten("", effective(c), &entries)
	return entries
}

// Get is the value in force of key (a whole object when key names one).
func (c Config) Get(key string) (any, error) {
	if _, err := configKeyType(key); err != nil {
		return nil, err
	}
	v := any(effective(c))
	for _, part := range strings.Split(key, ".") {
		m, _ := v.(map[string]any)
		v = m[part] // a key the file may leave out (omitempty) reads as null
	}
	return v, nil
}

// SetConfig sets key to value in .norma/config.json, keeping every other key of the file, and
// returns the configuration then in force; it refuses (nothing written) an unknown key or a value the configuration would not load with.
// A string or duration key takes value as it is; any other takes it as JSON (a number, true,
// a list).
func (r *Repo) SetConfig(key, value string) (Config, error) {
	t, err := configKeyType(key)
	if err != nil {
		return Config{}, err
	}
	var v any
	if t.Kind() == reflect.String || t == durationType {
		v = value
	} else if err := json.Unmarshal([]byte(value), &v); err != nil {
		return Config{}, usagef(`give JSON for it: a number (5), true or false, a list (["go", "vet"]) or an object`,
			"config set %s: %q is not JSON (%s is not a string key)", key, value, key)
	}
	path := r.Path("config.json")
	file := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&file); err != nil {
			return Config{}, fatalf("fix "+path+" by hand first", "config %s: %v", path, err)
		}
	}
	setPath(file, strings.Split(key, "."), v)
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return Config{}, err
	}
	data = append(data, '\n')
	cfg := DefaultConfig()
	if err := parseConfig(data, &cfg); err != nil {
		return Config{}, usagef("see git norma help config for what each key takes", "config set: %v", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return Config{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// configKeyType is the Go type a dotted key of the configuration reads into; an unknown key is
// a usage error naming the keys known where it went wrong.
func configKeyType(key string) (reflect.Type, error) {
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
				return nil, usagef("git norma config list shows them all; git norma help config says what each does",
					"unknown config key %q (known keys here: %s)", key, strings.Join(names, ", "))
			}
			t = ft
		default:
			return nil, usagef("git norma config list shows them all", "unknown config key %q: %s takes a value, not keys", key, strings.Join(done, "."))
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

func flatten(prefix string, v any, out *[]ConfigEntry) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, ConfigEntry{Key: prefix, Value: v})
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		flatten(join(prefix, k), m[k], out)
	}
}

// setPath sets m[path...] to v, making the objects on the way.
func setPath(m map[string]any, path []string, v any) {
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

// ConfigValueText is a value as config get and list print it: strings bare, the rest JSON.
func ConfigValueText(v any) string {
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
