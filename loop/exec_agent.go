package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
)

// MaxOutputBytes bounds the stdout an agent may produce as its JSON answer. Anything longer
// is not a contract output; it is still kept in the log file, never in memory.
const MaxOutputBytes = 8 << 20

// ExecAgent runs a local program: the step's input JSON on stdin, its output JSON on stdout
// (spec 11). The argv is never passed through a shell.
type ExecAgent struct {
	Argv []string
	// Env is added to the environment the agent inherits.
	Env []string
}

// Run implements Agent.
func (a ExecAgent) Run(ctx context.Context, req Request) (Output, error) {
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return Output{}, protocolErrorf(ErrKindStart, "no command configured")
	}
	stdin, err := os.Open(req.InputPath)
	if err != nil {
		return Output{}, err
	}
	defer stdin.Close()
	cmd := exec.Command(a.Argv[0], a.Argv[1:]...)
	cmd.Dir = req.WorkDir
	cmd.Stdin = stdin
	cmd.Stdout = req.Stdout
	cmd.Stderr = req.Stderr
	cmd.Env = slices.Concat(BaseEnv(req.Env), StepEnv(req), a.Env)
	// The check step's log already holds the check commands' output; the answer is only
	// what the agent prints after it.
	offset, err := LogSize(req.StdoutPath)
	if err != nil {
		return Output{}, err
	}
	res, err := RunProcess(ctx, cmd, req.Timeout)
	switch {
	case err != nil && ctx.Err() != nil:
		return Output{}, err
	case err != nil:
		return Output{}, protocolErrorf(ErrKindStart, "cannot start %q: %v", a.Argv[0], StartHint(err))
	case res.TimedOut:
		return Output{}, protocolErrorf(ErrKindTimeout, "agent did not finish within %s; its process group was killed", req.Timeout)
	case res.ExitCode != 0:
		return Output{}, protocolErrorf(ErrKindExit, "agent exited with status %d (see logs/stderr.txt)", res.ExitCode)
	}
	return readOutput(req.StdoutPath, offset)
}

// StepDirEnv names the step directory in every agent's environment. A git-norma command that
// finds it set knows an agent is calling it, from inside a step.
const StepDirEnv = "NORMA_STEP_DIR"

// readOutput parses the agent's stdout log, from offset on, as exactly one JSON object.
func readOutput(path string, offset int64) (Output, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return Output{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Output{}, err
	}
	if st.Size()-offset > MaxOutputBytes {
		return Output{}, protocolErrorf(ErrKindTooLarge, "agent printed more than %d MiB on stdout; the output must be one JSON object", MaxOutputBytes>>20)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return Output{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxOutputBytes))
	if err != nil {
		return Output{}, err
	}
	return DecodeOutput(data)
}

// DecodeOutput parses one JSON object and nothing else.
func DecodeOutput(data []byte) (Output, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return Output{}, protocolErrorf(ErrKindInvalidJSON, "agent printed nothing on stdout; expected one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var out Output
	if err := dec.Decode(&out); err != nil {
		return Output{}, protocolErrorf(ErrKindInvalidJSON, "stdout is not a JSON output object: %v (starts with %q)", err, Snippet(trimmed))
	}
	if dec.More() {
		return Output{}, protocolErrorf(ErrKindInvalidJSON, "stdout has data after the JSON object (starts with %q)", Snippet(trimmed))
	}
	return out, nil
}

// String describes the agent for logs.
func (a ExecAgent) String() string { return fmt.Sprintf("exec %q", a.Argv) }
