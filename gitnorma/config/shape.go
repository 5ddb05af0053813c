package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

var (
	configType   = reflect.TypeOf(Config{})
	durationType = reflect.TypeOf(Duration(0))
)

// checkShape walks decoded JSON against the Go type it will be read into, so an unknown key or
// a wrong type is reported with its full path ("budgets.max_iterations: expected an integer,
// got string") rather than encoding/json's terse messages.
func checkShape(raw any, t reflect.Type, path string) error {
	if raw == nil {
		return nil // null keeps the default
	}
	if t == durationType {
		s, ok := raw.(string)
		if !ok {
			return shapeErr(path, "a duration string such as \"90s\" or \"10m\"", raw)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: %q is not a positive duration (use e.g. \"90s\" or \"10m\")", path, s)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStruct(raw, t, path)
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok {
			return shapeErr(path, "an object", raw)
		}
		for k, v := range m {
			if err := checkShape(v, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		list, ok := raw.([]any)
		if !ok {
			return shapeErr(path, "an array", raw)
		}
		for i, v := range list {
			if err := checkShape(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := raw.(string); !ok {
			return shapeErr(path, "a string", raw)
		}
	case reflect.Int:
		n, ok := raw.(json.Number)
		if _, err := n.Int64(); !ok || err != nil {
			return shapeErr(path, "an integer", raw)
		}
	case reflect.Float64:
		n, ok := raw.(json.Number)
		if _, err := n.Float64(); !ok || err != nil {
			return shapeErr(path, "a number", raw)
		}
	case reflect.Bool:
		if _, ok := raw.(bool); !ok {
			return shapeErr(path, "true or false", raw)
		}
	}
	return nil
}

func checkStruct(raw any, t reflect.Type, path string) error {
	m, ok := raw.(map[string]any)
	if !ok {
		return shapeErr(path, "an object", raw)
	}
	for k, v := range m {
		ft, names := fieldOf(t, k)
		if ft == nil {
			return fmt.Errorf("unknown key %q (known keys here: %s)", join(path, k), strings.Join(names, ", "))
		}
		if err := checkShape(v, ft, join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

func shapeErr(path, want string, got any) error {
	return fmt.Errorf("%s: expected %s, got %s", path, want, describeJSON(got))
}

func describeJSON(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + x.String()
	case bool:
		return fmt.Sprintf("%t", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
