package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeConfig writes content as a config file in a fresh directory and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// requireFileError checks that err is a *FileError that names the file and contains every one
// of want.
func requireFileError(t *testing.T, err error, path string, want ...string) *FileError {
	t.Helper()
	require.Error(t, err)
	var e *FileError
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *FileError", err, err)
	assert.Contains(t, err.Error(), path)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
	return e
}

func TestDefaultConfig(t *testing.T) {
	cfg := Default()
	assert.Equal(t, "auto", cfg.Tracker)
	assert.Equal(t, "norma", cfg.IDPrefix)
	assert.Empty(t, cfg.TargetBranch)
	assert.False(t, cfg.DeleteBranchOnLand)

	agents := []struct {
		name    string
		got     Agent
		typ     string
		timeout time.Duration
	}{
		{"plan", cfg.Agents.Plan, AgentBuiltin, time.Minute},
		{"do", cfg.Agents.Do, AgentExec, 30 * time.Minute},
		{"check", cfg.Agents.Check, AgentBuiltin, 10 * time.Minute},
		{"act", cfg.Agents.Act, AgentBuiltin, time.Minute},
	}
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			assert.Equal(t, a.typ, a.got.Type)
			assert.Equal(t, Duration(a.timeout), a.got.Timeout)
			assert.Empty(t, a.got.Cmd)
			assert.Empty(t, a.got.Model)
		})
	}
	assert.Equal(t, Budgets{MaxIterations: 5, MaxWallTimeMinutes: 60, MaxFailedChecks: 5, MaxPatchKB: 1024, MaxSameFailures: 2}, cfg.Budgets)
	assert.Equal(t, Retention{KeepLast: 50, KeepDays: 30}, cfg.Retention)
	assert.Equal(t, map[string]string{"bug": "fix", "feature": "feat", "chore": "chore", "task": "feat"}, cfg.Commit.TypeMap)
	assert.Equal(t, "feat", cfg.Commit.DefaultType)
	assert.Empty(t, cfg.Commit.CoAuthor)
	require.NoError(t, cfg.validate(), "the defaults must pass their own validation")

	// Each call returns its own map: a caller changing one config cannot change the defaults.
	cfg.Commit.TypeMap["bug"] = "chore"
	assert.Equal(t, "fix", Default().Commit.TypeMap["bug"])
}

func TestLoadConfigMissingFile(t *testing.T) {
	cfg, err := Load(filepath.Join(t.TempDir(), "no-such-config.json"))
	require.NoError(t, err)
	assert.Equal(t, Default(), cfg)
}

func TestLoadConfigMergesOverDefaults(t *testing.T) {
	tests := []struct {
		name string
		json string
		// edit turns the defaults into the expected config.
		edit func(c *Config)
	}{
		{"empty object", `{}`, func(*Config) {}},
		{"top-level null", `null`, func(*Config) {}},
		{"only agents.do", `{"agents": {"do": {"type": "exec", "cmd": ["./agent", "--flag"]}}}`, func(c *Config) {
			c.Agents.Do.Cmd = []string{"./agent", "--flag"} // type exec, timeout 30m kept; plan/check/act builtin
		}},
		{"only agents.do.timeout", `{"agents": {"do": {"timeout": "90s"}}}`, func(c *Config) {
			c.Agents.Do.Timeout = Duration(90 * time.Second)
		}},
		{"agents.check timeout in minutes", `{"agents": {"check": {"timeout": "10m"}}}`, func(*Config) {}},
		{"agent model", `{"agents": {"do": {"type": "claude", "model": "opus"}}}`, func(c *Config) {
			c.Agents.Do.Type, c.Agents.Do.Model = AgentClaude, "opus"
		}},
		{"only budgets.max_iterations", `{"budgets": {"max_iterations": 9}}`, func(c *Config) {
			c.Budgets.MaxIterations = 9
		}},
		{"zero budget means no limit", `{"budgets": {"max_patch_kb": 0}}`, func(c *Config) {
			c.Budgets.MaxPatchKB = 0
		}},
		{"only retention.keep_days", `{"retention": {"keep_days": 7}}`, func(c *Config) {
			c.Retention.KeepDays = 7
		}},
		{"type_map entry added", `{"commit": {"type_map": {"spike": "chore"}}}`, func(c *Config) {
			c.Commit.TypeMap["spike"] = "chore"
		}},
		{"type_map entry overridden", `{"commit": {"type_map": {"bug": "chore"}}}`, func(c *Config) {
			c.Commit.TypeMap["bug"] = "chore"
		}},
		{"top-level scalars", `{"tracker": "jsonl", "id_prefix": "proj-x2", "target_branch": "develop", "delete_branch_on_land": true}`, func(c *Config) {
			c.Tracker, c.IDPrefix, c.TargetBranch, c.DeleteBranchOnLand = "jsonl", "proj-x2", "develop", true
		}},
		{"co_author and default_type", `{"commit": {"co_author": "Norma Agent <agent@example.com>", "default_type": "chore"}}`, func(c *Config) {
			c.Commit.CoAuthor, c.Commit.DefaultType = "Norma Agent <agent@example.com>", "chore"
		}},
		{"null scalar keeps the default", `{"tracker": null, "budgets": {"max_iterations": null}}`, func(*Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Default()
			tt.edit(&want)
			cfg, err := Load(writeConfig(t, tt.json))
			require.NoError(t, err)
			assert.Equal(t, want, cfg)
		})
	}
}

// configshape.go documents "null keeps the default" for every key; these are the kinds whose
// null encoding/json does not ignore.
func TestLoadConfigNullKeepsDefaultForDurationsAndMaps(t *testing.T) {
	tests := []struct {
		name string
		json string
		bug  string
	}{
		{"null timeout", `{"agents": {"do": {"timeout": null}}}`,
			`"timeout": null fails with time: invalid duration "" (no key named) instead of keeping the default`},
		{"null type_map", `{"commit": {"type_map": null}}`,
			`"type_map": null empties the map instead of keeping the default`},
		{"null cmd", `{"agents": {"do": {"cmd": null}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(writeConfig(t, tt.json))
			require.NoError(t, err)
			want := Default()
			assert.Equal(t, want.Agents.Do.Timeout, cfg.Agents.Do.Timeout)
			assert.Equal(t, want.Commit.TypeMap, cfg.Commit.TypeMap)
			assert.Empty(t, cfg.Agents.Do.Cmd)
		})
	}
}

func TestLoadConfigRejects(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string
	}{
		// unknown keys, with the full dotted path
		{"unknown top-level key", `{"trackr": "auto"}`, []string{`unknown key "trackr"`, "known keys here: tracker, id_prefix"}},
		{"unknown agent key", `{"agents": {"do": {"cmdd": ["./a"]}}}`, []string{`unknown key "agents.do.cmdd"`, "type, cmd, timeout, model"}},
		{"unknown role", `{"agents": {"review": {"type": "exec"}}}`, []string{`unknown key "agents.review"`}},
		{"unknown budget", `{"budgets": {"max_iteration": 3}}`, []string{`unknown key "budgets.max_iteration"`}},
		{"unknown retention key", `{"retention": {"keep": 3}}`, []string{`unknown key "retention.keep"`}},
		{"unknown commit key", `{"commit": {"typemap": {}}}`, []string{`unknown key "commit.typemap"`}},

		// wrong types: path, expected, got
		{"lease too short", `{"worker": {"lease": "1s"}}`, []string{`worker.lease: 1s is too short (at least 3s`}},
		{"string for int", `{"budgets": {"max_iterations": "5"}}`, []string{`budgets.max_iterations: expected an integer, got the string "5"`}},
		{"float for int", `{"budgets": {"max_patch_kb": 1.5}}`, []string{`budgets.max_patch_kb: expected an integer, got the number 1.5`}},
		{"exponent for int", `{"retention": {"keep_last": 1e2}}`, []string{`retention.keep_last: expected an integer, got the number 1e2`}},
		{"array for string", `{"agents": {"do": {"type": ["exec"]}}}`, []string{`agents.do.type: expected a string, got an array`}},
		{"number for bool", `{"delete_branch_on_land": 1}`, []string{`delete_branch_on_land: expected true or false, got the number 1`}},
		{"object for array", `{"agents": {"do": {"cmd": {"0": "./a"}}}}`, []string{`agents.do.cmd: expected an array, got an object`}},
		{"string for array", `{"agents": {"do": {"cmd": "./a --flag"}}}`, []string{`agents.do.cmd: expected an array, got the string "./a --flag"`}},
		{"number in array", `{"agents": {"do": {"cmd": ["./a", 3]}}}`, []string{`agents.do.cmd[1]: expected a string, got the number 3`}},
		{"bool in type_map", `{"commit": {"type_map": {"bug": true}}}`, []string{`commit.type_map.bug: expected a string, got true`}},
		{"string for object", `{"agents": "exec"}`, []string{`agents: expected an object, got the string "exec"`}},
		{"bool for string", `{"tracker": false}`, []string{`tracker: expected a string, got false`}},
		{"array for map", `{"commit": {"type_map": ["bug"]}}`, []string{`commit.type_map: expected an object, got an array`}},
		{"top-level array", `[]`, []string{`expected an object, got an array`}},
		{"string for setup command", `{"worktree": {"setup": ["npm ci"]}}`, []string{`worktree.setup[0]: expected an array, got the string "npm ci"`}},
		{"empty setup command", `{"worktree": {"setup": [[]]}}`, []string{`worktree.setup[0]: an empty command`}},

		// durations
		{"duration in words", `{"agents": {"do": {"timeout": "10 minutes"}}}`, []string{`agents.do.timeout: "10 minutes" is not a positive duration`}},
		{"negative duration", `{"agents": {"plan": {"timeout": "-5s"}}}`, []string{`agents.plan.timeout: "-5s" is not a positive duration`}},
		{"zero duration", `{"agents": {"check": {"timeout": "0s"}}}`, []string{`agents.check.timeout: "0s" is not a positive duration`}},
		{"empty duration", `{"agents": {"act": {"timeout": ""}}}`, []string{`agents.act.timeout: "" is not a positive duration`}},
		{"number duration", `{"agents": {"do": {"timeout": 5}}}`, []string{`agents.do.timeout: expected a duration string such as "90s" or "10m", got the number 5`}},

		// syntax errors name the line
		{"bare word on line 3", "{\n  \"tracker\": \"auto\",\n  \"id_prefix\": norma\n}\n", []string{"invalid JSON at line 3"}},
		{"double comma on line 2", "{\n  \"tracker\": \"auto\",,\n  \"id_prefix\": \"norma\"\n}\n", []string{"invalid JSON at line 2"}},
		{"trailing comma before the brace on line 4", "{\n  \"budgets\": {\n    \"max_iterations\": 3,\n  },\n}\n", []string{"invalid JSON at line 4"}},
		{"unterminated object", `{"tracker": "auto"`, []string{"invalid JSON"}},
		{"empty file", ``, []string{"invalid JSON"}},

		// trailing data
		{"second object", `{} {}`, []string{"extra data after the JSON object"}},
		{"second object on the next line", "{\"tracker\": \"jsonl\"}\n{\"tracker\": \"beads\"}\n", []string{"extra data after the JSON object"}},
		{"trailing word", `{} x`, []string{"extra data after the JSON object"}},
		{"trailing brace", `{}}`, []string{"after top-level value"}},
		{"trailing bracket", `{"tracker": "auto"}]`, []string{"after top-level value"}},

		// values the JSON types cannot check
		{"unknown tracker", `{"tracker": "github"}`, []string{`tracker: must be auto, jsonl or beads, got "github"`}},
		{"unknown filed_tasks", `{"filed_tasks": "trust"}`, []string{`filed_tasks: must be review or work, got "trust"`}},
		{"empty tracker", `{"tracker": ""}`, []string{`tracker: must be auto, jsonl or beads, got ""`}},
		{"uppercase prefix", `{"id_prefix": "Norma"}`, []string{`id_prefix: "Norma" is not a valid prefix`}},
		{"empty prefix", `{"id_prefix": ""}`, []string{`id_prefix: "" is not a valid prefix`}},
		{"prefix with trailing dash", `{"id_prefix": "norma-"}`, []string{`id_prefix: "norma-" is not a valid prefix`}},
		{"prefix starting with a digit", `{"id_prefix": "9x"}`, []string{`id_prefix: "9x" is not a valid prefix`}},
		{"prefix with a path", `{"id_prefix": "../x"}`, []string{`id_prefix: "../x" is not a valid prefix`}},
		{"unknown agent type", `{"agents": {"plan": {"type": "gpt"}}}`, []string{`agents.plan.type: must be one of`, `got "gpt"`}},
		{"empty agent type", `{"agents": {"act": {"type": ""}}}`, []string{`agents.act.type: must be one of`}},
		{"builtin do", `{"agents": {"do": {"type": "builtin"}}}`, []string{`agents.do.type: there is no built-in Do agent`}},
		{"co_author without email", `{"commit": {"co_author": "Claude"}}`, []string{`commit.co_author: "Claude" is not of the form "Name <email>"`}},
		{"co_author email without @", `{"commit": {"co_author": "Claude <claude>"}}`, []string{`commit.co_author: "Claude <claude>"`}},
		{"co_author without name", `{"commit": {"co_author": "<a@example.com>"}}`, []string{`commit.co_author:`}},
		{"co_author with trailing text", `{"commit": {"co_author": "A <a@example.com> x"}}`, []string{`commit.co_author:`}},
		{"default_type not conventional", `{"commit": {"default_type": "feature"}}`, []string{`commit.default_type: "feature" is not one of`}},
		{"type_map value not conventional", `{"commit": {"type_map": {"bug": "bugfix"}}}`, []string{`commit.type_map.bug: "bugfix" is not one of`}},
		{"negative max_iterations", `{"budgets": {"max_iterations": -1}}`, []string{`budgets.max_iterations: must be 0 (no limit) or more, got -1`}},
		{"negative max_wall_time_minutes", `{"budgets": {"max_wall_time_minutes": -60}}`, []string{`budgets.max_wall_time_minutes: must be 0 (no limit) or more, got -60`}},
		{"negative max_failed_checks", `{"budgets": {"max_failed_checks": -2}}`, []string{`budgets.max_failed_checks: must be 0 (no limit) or more, got -2`}},
		{"several negative budgets: the first is named", `{"budgets": {"max_retries": -1, "max_iterations": -3, "max_patch_kb": -2}}`, []string{`budgets.max_iterations: must be 0 (no limit) or more, got -3`}},
		{"negative max_patch_kb", `{"budgets": {"max_patch_kb": -1024}}`, []string{`budgets.max_patch_kb: must be 0 (no limit) or more, got -1024`}},
		{"negative keep_last", `{"retention": {"keep_last": -5}}`, []string{`retention.keep_last: must be 0 (rule off) or more, got -5`}},
		{"negative keep_days", `{"retention": {"keep_days": -1}}`, []string{`retention.keep_days: must be 0 (rule off) or more, got -1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.json)
			_, err := Load(path)
			e := requireFileError(t, err, path, tt.want...)
			assert.False(t, e.Unreadable, "the file was read")
		})
	}
}

func TestLoadConfigUnreadable(t *testing.T) {
	// A directory where the file should be: os.ReadFile fails with something other than
	// "does not exist".
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.Mkdir(path, 0o755))
	_, err := Load(path)
	e := requireFileError(t, err, path, "read config")
	assert.True(t, e.Unreadable)
}

func TestConfigRoundTrip(t *testing.T) {
	custom := Default()
	custom.Tracker, custom.IDPrefix, custom.TargetBranch = "jsonl", "proj", "develop"
	custom.Agents.Do = Agent{Type: AgentExec, Cmd: []string{"./agent", "--flag", "a b"}, Timeout: Duration(90 * time.Second)}
	custom.Agents.Plan = Agent{Type: AgentClaude, Model: "opus", Timeout: Duration(2*time.Minute + 30*time.Second)}
	custom.Budgets = Budgets{MaxIterations: 0, MaxWallTimeMinutes: 1, MaxFailedChecks: 2, MaxPatchKB: 3}
	custom.Retention = Retention{KeepLast: 1, KeepDays: 0}
	custom.Commit = Commit{TypeMap: map[string]string{"bug": "fix", "spike": "chore"}, DefaultType: "refactor", CoAuthor: "Norma Agent <agent@example.com>"}
	custom.DeleteBranchOnLand = true

	tests := []struct {
		name    string
		cfg     Config
		marshal func(any) ([]byte, error)
	}{
		{"defaults compact", Default(), json.Marshal},
		{"defaults indented", Default(), func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }},
		{"every key set", custom, json.Marshal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := tt.marshal(tt.cfg)
			require.NoError(t, err)
			cfg, err := Load(writeConfig(t, string(data)))
			require.NoError(t, err, "config written by json.Marshal:\n%s", data)
			// type_map entries merge over the default map.
			want := tt.cfg
			merged := Default().Commit.TypeMap
			for k, v := range want.Commit.TypeMap {
				merged[k] = v
			}
			want.Commit.TypeMap = merged
			assert.Equal(t, want, cfg)
		})
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		json string
	}{
		{"seconds", 90 * time.Second, `"1m30s"`},
		{"minutes", 10 * time.Minute, `"10m0s"`},
		{"hours", 2 * time.Hour, `"2h0m0s"`},
		{"milliseconds", 1500 * time.Millisecond, `"1.5s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(Duration(tt.d))
			require.NoError(t, err)
			assert.Equal(t, tt.json, string(data))
			var back Duration
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, Duration(tt.d), back)
		})
	}
}
