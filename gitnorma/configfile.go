package gitnorma

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/config"
)

// loadConfig reads the repository's config file: one that cannot be read or used is an error
// of the environment, with what to do about it.
func loadConfig(path string) (config.Config, error) {
	cfg, err := config.Load(path)
	var fe *config.FileError
	if errors.As(err, &fe) {
		hint := "fix " + path + " (see the configuration reference in the README)"
		if fe.Unreadable {
			hint = "make " + path + " a readable JSON file (or remove it to use the defaults)"
		}
		return cfg, &Error{Kind: ErrEnvironment, Err: err, Hint: hint}
	}
	return cfg, err
}

// ConfigValue is the value in force of key (a whole object when key names one); an unknown
// key is a usage error.
func ConfigValue(cfg config.Config, key string) (any, error) {
	v, err := cfg.Get(key)
	return v, keyUsage(err)
}

// keyUsage makes an unknown key a usage error, with where to find the known ones.
func keyUsage(err error) error {
	var ke *config.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	hint := "git norma config list shows them all; git norma help config says what each does"
	if ke.Leaf != "" {
		hint = "git norma config list shows them all"
	}
	return &Error{Kind: ErrUsage, Err: err, Hint: hint}
}

// SetConfig sets key to value in .norma/config.json, keeping every other key of the file, and
// returns the configuration then in force; it refuses (nothing written) an unknown key or a
// value the configuration would not load with. A string or duration key takes value as it
// is; any other takes it as JSON (a number, true, a list).
func (r *Repo) SetConfig(key, value string) (config.Config, error) {
	text, err := config.TakesText(key)
	if err != nil {
		return config.Config{}, keyUsage(err)
	}
	var v any
	if text {
		v = value
	} else if err := json.Unmarshal([]byte(value), &v); err != nil {
		return config.Config{}, usagef(`give JSON for it: a number (5), true or false, a list (["go", "vet"]) or an object`,
			"config set %s: %q is not JSON (%s is not a string key)", key, value, key)
	}
	path := r.Path("config.json")
	file := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&file); err != nil {
			return config.Config{}, fatalf("fix "+path+" by hand first", "config %s: %v", path, err)
		}
	}
	config.SetPath(file, strings.Split(key, "."), v)
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return config.Config{}, err
	}
	data = append(data, '\n')
	cfg, err := config.Parse(data)
	if err != nil {
		return config.Config{}, usagef("see git norma help config for what each key takes", "config set: %v", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return config.Config{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return config.Config{}, err
	}
	return cfg, nil
}
