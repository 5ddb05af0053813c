package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/config"
)

// configManPage is gitnorma-config(5): the prose of doc/gitnorma-config.txt, whose KEYS section
// describes every key, with each key's default taken from gitnorma.DefaultConfig.
func configManPage() (*page, error) {
	secs, err := prose(configPage)
	if err != nil {
		return nil, err
	}
	defaults := configDefaults()
	for i := range secs {
		if secs[i].title != "KEYS" {
			continue
		}
		for j, b := range secs[i].blocks {
			if d, ok := defaults[b.term]; ok && b.kind == blockItem {
				secs[i].blocks[j].text += " Default: " + d + "."
			}
		}
	}
	p := &page{name: configPage, section: 5, summary: "the git-norma configuration file, .norma/config.json",
		synopsis: []string{".norma/config.json"}}
	return p.compose(secs, "The configuration of git-norma.", nil, false,
		"git-norma(1)", "git-norma-init(1)", "git-norma-run(1)", "git-norma-doctor(1)"), nil
}

// configKeys lists every key of .norma/config.json as a dotted path, agents' roles folded
// into agents.<role>: the keys the manual (and the README) must describe.
func configKeys() []string {
	return appendKeys(nil, reflect.TypeOf(config.Config{}), "")
}

// configDefaults renders each key's default as JSON in backticks; an agents.<role> key whose
// default differs between roles lists them.
func configDefaults() map[string]string {
	var raw map[string]any
	data, _ := json.Marshal(config.Default())
	_ = json.Unmarshal(data, &raw)
	out := map[string]string{}
	for _, key := range configKeys() {
		if !strings.HasPrefix(key, "agents.<role>.") {
			out[key] = defaultText(lookup(raw, strings.Split(key, ".")))
			continue
		}
		var vals, per []string
		for _, role := range []string{"plan", "do", "check", "act"} {
			v := defaultText(lookup(raw, strings.Split(strings.Replace(key, "<role>", role, 1), ".")))
			vals = append(vals, v)
			per = append(per, role+" "+v)
		}
		out[key] = strings.Join(per, ", ")
		if len(slices.Compact(vals)) == 1 {
			out[key] = vals[0]
		}
	}
	return out
}

func lookup(v any, path []string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func defaultText(v any) string {
	if v == nil {
		return "none"
	}
	data, _ := json.Marshal(v)
	text := strings.NewReplacer(`,"`, `, "`, `":`, `": `).Replace(string(data)) // breakable lines
	return "`" + text + "`"
}

// appendKeys appends every key below t: structs are descended, everything else (values,
// arrays, maps, durations) is a key; the four identical agent sections are one, agents.<role>.
func appendKeys(keys []string, t reflect.Type, prefix string) []string {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		path := prefix + name
		ft := f.Type
		switch {
		case path == "agents":
			keys = appendKeys(keys, ft.Field(0).Type, "agents.<role>.")
		case ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.PkgPath() == reflect.TypeOf(config.Config{}).PkgPath():
			keys = appendKeys(keys, ft, path+".")
		default:
			keys = append(keys, path)
		}
	}
	return keys
}
