// Package hooks connects git-norma to git's hooks. Git runs hooks for git-norma's own commits
// and merges too (step commits, landing fast-forwards); the recursion guard lets a hook tell
// those apart from a human's, so the loop never re-triggers itself.
package hooks

import "strings"

// GuardVar is set in the environment of every git process git-norma starts itself.
const GuardVar = "GIT_NORMA_INTERNAL"

// GuardEnv is the environment entry that marks git-norma's own git processes.
const GuardEnv = GuardVar + "=1"

// Internal reports whether env (os.Environ() of a hook) belongs to a git process that
// git-norma itself started.
func Internal(env []string) bool {
	for _, kv := range env {
		if name, val, ok := strings.Cut(kv, "="); ok && name == GuardVar && val != "" && val != "0" {
			return true
		}
	}
	return false
}
