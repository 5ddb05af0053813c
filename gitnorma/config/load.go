package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// Load reads path over the defaults. A missing file gives the defaults; malformed JSON,
// an unknown key or a wrong type is an error naming the key.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Default(), &FileError{Path: path, Unreadable: true, Err: err}
	}
	cfg, err := Parse(data)
	if err != nil {
		return cfg, &FileError{Path: path, Err: err}
	}
	return cfg, nil
}

// FileError is a config file that cannot be read (Unreadable) or does not hold a valid
// configuration.
type FileError struct {
	Path       string
	Unreadable bool
	Err        error
}

func (e *FileError) Error() string {
	if e.Unreadable {
		return fmt.Sprintf("read config %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("config %s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Parse reads data (a config file's content) over the defaults.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return cfg, syntaxError(data, err)
	}
	if dec.More() {
		return cfg, errors.New("extra data after the JSON object")
	}
	if err := checkShape(raw, configType, ""); err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Commit.TypeMap == nil { // "type_map": null keeps the default, like every other null
		cfg.Commit.TypeMap = Default().Commit.TypeMap
	}
	return cfg, cfg.validate()
}

func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("invalid JSON at line %d: %v", line, se)
	}
	return fmt.Errorf("invalid JSON: %v", err)
}

// validate checks the values the JSON types cannot.
func (c *Config) validate() error {
	if !slices.Contains([]string{"auto", "jsonl", "beads"}, c.Tracker) {
		return fmt.Errorf("tracker: must be auto, jsonl or beads, got %q", c.Tracker)
	}
	if c.RecoverPassed != RecoverLand && c.RecoverPassed != RecoverReopen {
		return fmt.Errorf("recover_passed: must be land or reopen, got %q", c.RecoverPassed)
	}
	if c.FiledTasks != FiledReview && c.FiledTasks != FiledWork {
		return fmt.Errorf("filed_tasks: must be review or work, got %q", c.FiledTasks)
	}
	if !tracker.ValidPrefix(c.IDPrefix) {
		return fmt.Errorf("id_prefix: %q is not a valid prefix (lowercase letters, digits and '-', starting with a letter)", c.IDPrefix)
	}
	for _, ra := range c.Agents.ByRole() {
		if !slices.Contains(agentTypes, ra.Agent.Type) {
			return fmt.Errorf("agents.%s.type: must be one of %v, got %q", ra.Role, agentTypes, ra.Agent.Type)
		}
		if ra.Agent.Type == AgentBuiltin && ra.Role == "do" {
			return errors.New("agents.do.type: there is no built-in Do agent; use exec or an agent CLI")
		}
	}
	if time.Duration(c.Worker.Lease) < MinLease {
		return fmt.Errorf("worker.lease: %s is too short (at least %s: a run renews it every third)", time.Duration(c.Worker.Lease), MinLease)
	}
	if c.Commit.CoAuthor != "" && !coAuthorRE().MatchString(c.Commit.CoAuthor) {
		return fmt.Errorf("commit.co_author: %q is not of the form \"Name <email>\"", c.Commit.CoAuthor)
	}
	if c.Commit.DefaultType != "" && !slices.Contains(ConventionalTypes, c.Commit.DefaultType) {
		return fmt.Errorf("commit.default_type: %q is not one of %v", c.Commit.DefaultType, ConventionalTypes)
	}
	for issueType, typ := range c.Commit.TypeMap {
		if !slices.Contains(ConventionalTypes, typ) {
			return fmt.Errorf("commit.type_map.%s: %q is not one of %v", issueType, typ, ConventionalTypes)
		}
	}
	seen := map[string]bool{}
	for i, g := range c.Gates {
		if !gateNameRE().MatchString(g.Name) || seen[g.Name] {
			return fmt.Errorf("gates[%d].name: %q must be unique and made of letters, digits, '-' and '_'", i, g.Name)
		}
		if strings.TrimSpace(g.Cmd) == "" {
			return fmt.Errorf("gates[%d].cmd: the gate %q has no command", i, g.Name)
		}
		seen[g.Name] = true
	}
	for i, argv := range c.Worktree.Setup {
		if len(argv) == 0 || argv[0] == "" {
			return fmt.Errorf("worktree.setup[%d]: an empty command; give an argv such as [\"npm\", \"ci\"]", i)
		}
	}
	if _, err := sandbox.ParseMode(c.Sandbox.Mode); err != nil {
		return fmt.Errorf("sandbox.mode: %v", err)
	}
	if c.MaxParallel < 1 {
		return fmt.Errorf("max_parallel: must be 1 or more, got %d", c.MaxParallel)
	}
	// Negative retention would keep nothing by that rule, as 0 does: refused, as the prune flags are.
	for _, f := range []struct {
		name string
		v    int
	}{{"keep_last", c.Retention.KeepLast}, {"keep_days", c.Retention.KeepDays}} {
		if f.v < 0 {
			return fmt.Errorf("retention.%s: must be 0 (rule off) or more, got %d", f.name, f.v)
		}
	}
	b := c.Budgets
	if b.MaxCostUSD < 0 {
		return fmt.Errorf("budgets.max_cost_usd: must be 0 (no limit) or more, got %g", b.MaxCostUSD)
	}
	// In the file's order, so that of several wrong budgets the first is named, every time.
	for _, f := range []struct {
		name string
		v    int
	}{{"max_iterations", b.MaxIterations}, {"max_wall_time_minutes", b.MaxWallTimeMinutes}, {"max_failed_checks", b.MaxFailedChecks},
		{"max_patch_kb", b.MaxPatchKB}, {"max_same_failures", b.MaxSameFailures}, {"max_retries", b.MaxRetries}} {
		if f.v < 0 {
			return fmt.Errorf("budgets.%s: must be 0 (no limit) or more, got %d", f.name, f.v)
		}
	}
	return nil
}
