package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneCommandModelParsesLikeTheWholeTree parses command lines of every kind against the
// one-command model and the whole tree: the command's values and the global flags must come
// out the same, so the fast path changes nothing but start-up time.
func TestOneCommandModelParsesLikeTheWholeTree(t *testing.T) {
	lines := [][]string{
		{"status"},
		{"-q", "status", "--json", "-n", "5"},
		{"status", "r-20260101-000000-abcd", "-v"},
		{"run", "nm-1", "--no-land", "--no-color"},
		{"loop", "--parallel", "2", "--json"},
		{"task", "add", "Title", "-d", "Artifact: a.txt", "--verify", "make test", "--verify", "go vet ./..."},
		{"task", "list", "--json"},
		{"hooks", "install"},
		{"hook", "pre-commit"},
		{"log", "nm-1", "--json"},
		{"prune", "--force"},
		{"version"},
		{"doctor", "--json"},
		{"schema", "do", "--input"},
	}
	quiet := IO{Out: io.Discard, Err: io.Discard}
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var cli CLI
			full, err := newParser(&cli, quiet)
			require.NoError(t, err)
			_, err = full.Parse(args)
			require.NoError(t, err)

			target, globals, ok := oneCommandModel(args)
			require.True(t, ok, "no one-command model for %v", args)
			one, err := newParser(target, quiet)
			require.NoError(t, err)
			_, err = one.Parse(args)
			require.NoError(t, err)

			cmd := reflect.ValueOf(target).Elem().Field(1)
			want := reflect.ValueOf(cli).FieldByName(reflect.TypeOf(target).Elem().Field(1).Name).Interface()
			require.Equal(t, want, cmd.Interface())
			require.Equal(t, cli.globalFlags, globals())
		})
	}
}

// TestOneCommandModelStepsAside checks what must keep the whole tree: help in any form, the
// commands that render it, and command lines it does not recognise.
func TestOneCommandModelStepsAside(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-q"}, {"help"}, {"man"}, {"completion", "bash"}, {"status", "-h"}, {"run", "--help"},
		{"statu"}, {"--", "status"},
	} {
		_, _, ok := oneCommandModel(args)
		require.False(t, ok, "%v", args)
	}
}

// TestUsageErrorsReadAsBefore checks that a command line the one-command model cannot parse is
// reported by the whole tree: same message, same hint, same exit code.
func TestUsageErrorsReadAsBefore(t *testing.T) {
	for args, want := range map[string]string{
		"status --bogus": "git norma: unknown flag --bogus\nhint: see git norma status -h\n",
		"task":           "hint: see git norma task -h\n",
		"run":            "hint: see git norma run -h\n",
	} {
		var stderr strings.Builder
		code := Main(strings.Fields(args), IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr})
		require.Equal(t, 129, code, args)
		require.Contains(t, stderr.String(), want, args)
	}
}
